// Go's crypto/x509 and crypto/tls as one verifier stack of PinningLab's compatibility suite.
// Usage: verify --mode path|handshake CASES.json   (one JSON line per case on stdout; see ../../README.md)
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"time"
)

type Case struct {
	ID      string   `json:"id"`
	Chain   []string `json:"chain"`
	Roots   []string `json:"roots"`
	Host    string   `json:"host"`
	Purpose string   `json:"purpose"`
	Port    int      `json:"port"`
}

type Result struct {
	ID     string `json:"id"`
	Result string `json:"result"`
	Detail string `json:"detail"`
}

func certs(paths []string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		for {
			var blk *pem.Block
			blk, b = pem.Decode(b)
			if blk == nil {
				break
			}
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", p, err)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func pool(paths []string) (*x509.CertPool, error) {
	cs, err := certs(paths)
	if err != nil {
		return nil, err
	}
	p := x509.NewCertPool()
	for _, c := range cs {
		p.AddCert(c)
	}
	return p, nil
}

func path(c Case) Result {
	chain, err := certs(c.Chain)
	if err != nil || len(chain) == 0 {
		return Result{c.ID, "refuse", fmt.Sprintf("cannot parse: %v", err)}
	}
	roots, err := pool(c.Roots)
	if err != nil {
		return Result{c.ID, "refuse", err.Error()}
	}
	inter := x509.NewCertPool()
	for _, x := range chain[1:] {
		inter.AddCert(x)
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: c.Host,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if c.Purpose == "client" {
		opts.DNSName = ""
		opts.KeyUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	chains, err := chain[0].Verify(opts)
	if err != nil {
		return Result{c.ID, "refuse", err.Error()}
	}
	// Every chain Verify built, by the anchor that ends it (what a root pin is compared with).
	ends := make([]string, 0, len(chains))
	for _, ch := range chains {
		ends = append(ends, fmt.Sprintf("%s (%d certificates)", ch[len(ch)-1].Subject.CommonName, len(ch)))
	}
	return Result{c.ID, "accept", "verified; path ends at " + strings.Join(ends, " or ")}
}

// ChainResult is the "chain" mode's answer: every chain Verify returned, in its order, each certificate as
// base64 DER from the leaf to the anchor (the trust-store drift table, Compatibility/drift.py).
type ChainResult struct {
	ID     string     `json:"id"`
	Result string     `json:"result"`
	Detail string     `json:"detail"`
	Chains [][]string `json:"chains"`
}

func verifiedChains(c Case) ChainResult {
	chain, err := certs(c.Chain)
	if err != nil || len(chain) == 0 {
		return ChainResult{c.ID, "refuse", fmt.Sprintf("cannot parse: %v", err), nil}
	}
	roots, err := pool(c.Roots)
	if err != nil {
		return ChainResult{c.ID, "refuse", err.Error(), nil}
	}
	inter := x509.NewCertPool()
	for _, x := range chain[1:] {
		inter.AddCert(x)
	}
	chains, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: c.Host,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return ChainResult{c.ID, "refuse", err.Error(), nil}
	}
	out := make([][]string, 0, len(chains))
	for _, ch := range chains {
		der := make([]string, 0, len(ch))
		for _, x := range ch {
			der = append(der, base64.StdEncoding.EncodeToString(x.Raw))
		}
		out = append(out, der)
	}
	return ChainResult{c.ID, "accept", fmt.Sprintf("%d chains", len(chains)), out}
}

func handshake(c Case) Result {
	if c.Port == 0 {
		return Result{c.ID, "n/a", "no server for this case"}
	}
	roots, err := pool(c.Roots)
	if err != nil {
		return Result{c.ID, "refuse", err.Error()}
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", fmt.Sprintf("127.0.0.1:%d", c.Port),
		&tls.Config{RootCAs: roots, ServerName: c.Host, MinVersion: tls.VersionTLS12})
	if err != nil {
		return Result{c.ID, "refuse", err.Error()}
	}
	conn.Close()
	return Result{c.ID, "accept", "handshake completed"}
}

func main() {
	mode := flag.String("mode", "path", "path, handshake or chain (path, printing every verified chain)")
	version := flag.Bool("version", false, "print the stack's version")
	flag.Parse()
	if *version {
		fmt.Printf("Go %s crypto/x509, crypto/tls\n", runtime.Version())
		return
	}
	b, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "verify:", err)
		os.Exit(2)
	}
	var cases []Case
	if err := json.Unmarshal(b, &cases); err != nil {
		fmt.Fprintln(os.Stderr, "verify: cases:", err)
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	for _, c := range cases {
		if *mode == "chain" {
			enc.Encode(verifiedChains(c))
		} else if *mode == "handshake" {
			if c.Purpose == "client" {
				enc.Encode(Result{c.ID, "n/a", "client certificates are judged by path validation"})
				continue
			}
			enc.Encode(handshake(c))
		} else {
			enc.Encode(path(c))
		}
	}
}
