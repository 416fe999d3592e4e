// A pinning HTTPS client in Go's crypto/tls, as a PinningLab batch harness (standard library only; Go 1.19 or later).
//
// Build and run (one process for every cell):
//
//	go build -o pinlab-batch-go Examples/Batch/go/pinlab_batch.go
//	pinlab check --batch -- ./pinlab-batch-go
//
// It reads the batch document on standard input (or from the file named by $PINLAB_BATCH) and prints one JSON answer
// per cell on standard output: {"id": …, "claim": "accepted"|"refused", "category": …, "detail": …, "milliseconds": …}.
//
// A cell is judged as a Go app that pins does it: a tls.Config whose RootCAs hold only the roots of the cell's trust
// file, ServerName the cell's host (the SNI and the name the certificate is checked against; a trailing dot is not
// part of either), and a VerifyConnection callback that crypto/tls calls after it verified the chain and the host
// name, on every connection (resumed ones included, with the chains the session was verified with). The callback
// accepts the connection only when a pin — base64 SHA-256 of a certificate's SubjectPublicKeyInfo DER, or of the
// whole certificate DER for pins of kind certificate-sha256 (leaf-cert) — matches a certificate of a verified chain
// (cs.VerifiedChains: the chains Go built to a trusted root, never the chain the server sent). Pins apply only when
// the host is in their scope (pins.domain, and its subdomains when pins.includeSubdomains). Only then is GET / sent.
// Cells of several connections (`--batch-steps`) are not made: run it without that flag.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

type pins struct {
	Kind              string   `json:"kind"`
	Base64            []string `json:"base64"`
	Domain            string   `json:"domain"`
	IncludeSubdomains bool     `json:"includeSubdomains"`
}

type identity struct {
	CertificateFile string `json:"certificateFile"`
	KeyFile         string `json:"keyFile"`
}

type cell struct {
	ID             string            `json:"id"`
	Host           string            `json:"host"`
	IP             string            `json:"ip"`
	Port           int               `json:"port"`
	TrustFile      string            `json:"trustFile"`
	Pins           pins              `json:"pins"`
	ClientIdentity *identity         `json:"clientIdentity"`
	Steps          []json.RawMessage `json:"steps"`
}

type document struct {
	CellTimeoutSeconds float64 `json:"cellTimeoutSeconds"`
	Cells              []cell  `json:"cells"`
}

type answer struct {
	ID           string  `json:"id"`
	Claim        string  `json:"claim"`
	Category     string  `json:"category,omitempty"`
	Detail       string  `json:"detail"`
	Milliseconds float64 `json:"milliseconds"`
}

// pinMismatch is what VerifyConnection returns when no pin matches a verified chain.
type pinMismatch struct{ host string }

func (e *pinMismatch) Error() string {
	return "no pin matches a verified chain of " + e.host
}

// inScope says whether pins declared for domain (and its subdomains when subdomains) apply to host.
func inScope(host, domain string, subdomains bool) bool {
	if domain == "" {
		return true
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	return host == domain || (subdomains && strings.HasSuffix(host, "."+domain))
}

// config is the client's TLS configuration for a cell: its roots, its host, its pins, its client certificate.
func config(c cell) (*tls.Config, error) {
	data, err := os.ReadFile(c.TrustFile)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("no certificate in %s", c.TrustFile)
	}
	want := map[string]bool{}
	if inScope(c.Host, c.Pins.Domain, c.Pins.IncludeSubdomains) {
		for _, p := range c.Pins.Base64 {
			want[p] = true
		}
	}
	certificatePins := c.Pins.Kind == "certificate-sha256"
	host := strings.TrimSuffix(c.Host, ".")
	cfg := &tls.Config{
		RootCAs:    roots,
		ServerName: host,
		MinVersion: tls.VersionTLS12,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(want) == 0 {
				return nil
			}
			for _, chain := range cs.VerifiedChains {
				for _, cert := range chain {
					pinned := cert.RawSubjectPublicKeyInfo
					if certificatePins {
						pinned = cert.Raw
					}
					sum := sha256.Sum256(pinned)
					if want[base64.StdEncoding.EncodeToString(sum[:])] {
						return nil
					}
				}
			}
			return &pinMismatch{host}
		},
	}
	if id := c.ClientIdentity; id != nil && id.CertificateFile != "" && id.KeyFile != "" {
		pair, err := tls.LoadX509KeyPair(id.CertificateFile, id.KeyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// category names why a connection was refused, in the batch protocol's words.
func category(err error) string {
	var pin *pinMismatch
	var hostname x509.HostnameError
	var authority x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var system x509.SystemRootsError
	var netErr net.Error
	switch {
	case errors.As(err, &pin):
		return "pin-mismatch"
	case errors.As(err, &hostname):
		return "hostname"
	case errors.As(err, &authority), errors.As(err, &invalid), errors.As(err, &system):
		return "chain-invalid"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case strings.Contains(err.Error(), "x509:"):
		return "chain-invalid"
	case strings.Contains(err.Error(), "certificate required"):
		return "client-auth"
	case strings.Contains(err.Error(), "tls:"):
		return "protocol"
	}
	return "other"
}

// judge connects to the cell's server, validates, pins, and sends GET / only when all is right.
func judge(c cell, timeout time.Duration) (claim, cat, detail string) {
	cfg, err := config(c)
	if err != nil {
		return "refused", "other", err.Error()
	}
	ip := c.IP
	if ip == "" {
		ip = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
	conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(c.Port)))
	if err != nil {
		return "refused", category(err), err.Error()
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", c.Host); err != nil {
		return "refused", category(err), err.Error()
	}
	response, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "refused", category(err), "no HTTP response: " + err.Error()
	}
	_, _ = io.Copy(io.Discard, response.Body)
	response.Body.Close()
	return "accepted", "", response.Proto + " " + response.Status
}

func main() {
	var input io.Reader = os.Stdin
	if path := os.Getenv("PINLAB_BATCH"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pinlab_batch.go:", err)
			os.Exit(2)
		}
		defer f.Close()
		input = f
	}
	var doc document
	if err := json.NewDecoder(input).Decode(&doc); err != nil {
		fmt.Fprintln(os.Stderr, "pinlab_batch.go: the batch document:", err)
		os.Exit(2)
	}
	timeout := time.Duration(doc.CellTimeoutSeconds * float64(time.Second))
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var out sync.Mutex
	encoder := json.NewEncoder(os.Stdout)
	work := make(chan cell)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ { // eight cells at a time
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				if len(c.Steps) > 0 {
					fmt.Fprintf(os.Stderr, "pinlab_batch.go: %s is several connections; this harness makes one per cell (run it without --batch-steps)\n", c.ID)
					continue
				}
				start := time.Now()
				claim, cat, detail := judge(c, timeout)
				a := answer{ID: c.ID, Claim: claim, Category: cat, Detail: detail,
					Milliseconds: float64(time.Since(start).Microseconds()) / 1000}
				out.Lock()
				_ = encoder.Encode(a) // one whole line at a time
				out.Unlock()
			}
		}()
	}
	for _, c := range doc.Cells {
		work <- c
	}
	close(work)
	wg.Wait()
}
