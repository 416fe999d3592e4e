// A pinning client made with Go's crypto/tls that keeps one TLS session cache across the connections of a cell.
//
// Run by pinlab as a command client whose template names the steps ({url.1}, {url.2}): the steps come from
// PINLAB_STEPS (a JSON array: host, ip, port, pins as base64 SHA-256 of the SPKI, empty where the step's pins are
// not in force) and the trust store from PINLAB_CA. Every step dials ip:port with ServerName `host` and one shared
// tls.NewLRUClientSessionCache, and prints one answer line: `accepted` when it sent its request, `refused` when it
// did not.
//
// Where the pin check lives is the argument:
//
//	verify-peer-certificate  tls.Config.VerifyPeerCertificate, which crypto/tls does not call on resumed
//	                         connections (golang/go #31641): the mistake resumption-after-unpinned-handshake catches
//	verify-connection        tls.Config.VerifyConnection, called on every connection, resumed ones included, with
//	                         the session's certificates in ConnectionState.PeerCertificates
package main

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

type step struct {
	Step int      `json:"step"`
	Host string   `json:"host"`
	IP   string   `json:"ip"`
	Port int      `json:"port"`
	Pins []string `json:"pins"`
}

func pinError(pins map[string]bool, certificates []*x509.Certificate, resumed bool) error {
	if len(pins) == 0 {
		return nil
	}
	if len(certificates) == 0 {
		return fmt.Errorf("no certificate to check the pins against")
	}
	sum := sha256.Sum256(certificates[0].RawSubjectPublicKeyInfo)
	if !pins[base64.StdEncoding.EncodeToString(sum[:])] {
		return fmt.Errorf("no pin matches (resumed session: %v)", resumed)
	}
	return nil
}

func main() {
	mode := "verify-connection"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	if mode != "verify-connection" && mode != "verify-peer-certificate" {
		fmt.Fprintf(os.Stderr, "usage: %s verify-peer-certificate|verify-connection\n", os.Args[0])
		os.Exit(2)
	}
	var steps []step
	if err := json.Unmarshal([]byte(os.Getenv("PINLAB_STEPS")), &steps); err != nil {
		fmt.Fprintf(os.Stderr, "PINLAB_STEPS: %v\n", err)
		os.Exit(2)
	}
	caPEM, err := os.ReadFile(os.Getenv("PINLAB_CA"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "PINLAB_CA: %v\n", err)
		os.Exit(2)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cache := tls.NewLRUClientSessionCache(8)
	for _, s := range steps {
		pins := map[string]bool{}
		for _, p := range s.Pins {
			pins[p] = true
		}
		config := &tls.Config{RootCAs: roots, ServerName: s.Host, ClientSessionCache: cache, MinVersion: tls.VersionTLS12}
		if mode == "verify-peer-certificate" {
			config.VerifyPeerCertificate = func(_ [][]byte, chains [][]*x509.Certificate) error {
				return pinError(pins, chains[0], false)
			}
		} else {
			config.VerifyConnection = func(state tls.ConnectionState) error {
				return pinError(pins, state.PeerCertificates, state.DidResume)
			}
		}
		answer := "accepted"
		dialer := &net.Dialer{Timeout: 5 * time.Second}
		conn, err := tls.DialWithDialer(dialer, "tcp", net.JoinHostPort(s.IP, strconv.Itoa(s.Port)), config)
		if err == nil {
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, err = conn.Write([]byte("GET / HTTP/1.1\r\nHost: " + s.Host + "\r\nConnection: close\r\n\r\n"))
			if err == nil {
				// Reading the response also takes the TLS 1.3 ticket into the cache.
				io.Copy(io.Discard, conn)
			}
			conn.Close()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "step %d: %v\n", s.Step, err)
			answer = "refused"
		}
		fmt.Println(answer)
	}
}
