// pq-gobench: Go 1.27's side of Benchmarks/pq/run.sh.
//
//	pq-gobench crypto ROUNDS            ML-DSA-65/87 (crypto/mldsa) and ECDSA P-256 (crypto/ecdsa, SHA-256) key
//	                                    generation, signing and verification: median µs per operation over ROUNDS
//	pq-gobench serve CERT.pem KEY.pem   a Go crypto/tls server on 127.0.0.1 (default configuration: TLS 1.3,
//	                                    X25519MLKEM768 first); prints its port, then completes handshakes, reads
//	                                    the request, answers a short HTTP response and closes each connection
//	pq-gobench load HOST:PORT GROUP SECONDS CONNS
//	                                    full TLS 1.3 handshakes (no session cache, so never resumed) from CONNS
//	                                    goroutines for SECONDS, offering only GROUP (x25519 or x25519mlkem768),
//	                                    reading the server's first bytes; prints handshakes/s, the group and the
//	                                    signature scheme seen. The chain is not verified (the CertificateVerify
//	                                    signature is: crypto/tls checks it in every handshake); each connection sends
//	                                    one GET and reads the first bytes of the answer. So that the load
//	                                    generator's CPU goes to the handshake, not to chain building.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/mldsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func die(err error) {
	fmt.Fprintln(os.Stderr, "pq-gobench:", err)
	os.Exit(1)
}

type op struct {
	name string
	n    int
	body func()
}

func cryptoBench(rounds int) {
	msg := make([]byte, 1500)
	rand.Read(msg)
	digest := sha256.Sum256(msg)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecSig, _ := ecdsa.SignASN1(rand.Reader, ec, digest[:])
	k65, _ := mldsa.GenerateKey(mldsa.MLDSA65())
	k87, _ := mldsa.GenerateKey(mldsa.MLDSA87())
	s65, _ := k65.Sign(nil, msg, nil)
	s87, _ := k87.Sign(nil, msg, nil)
	sink := 0
	ops := []op{
		{"P-256 keygen", 4000, func() { k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader); sink += len(k.D.Bytes()) }},
		{"P-256 sign", 4000, func() {
			d := sha256.Sum256(msg)
			s, _ := ecdsa.SignASN1(rand.Reader, ec, d[:])
			sink += len(s)
		}},
		{"P-256 verify", 2000, func() {
			d := sha256.Sum256(msg)
			if ecdsa.VerifyASN1(&ec.PublicKey, d[:], ecSig) {
				sink++
			}
		}},
		{"ML-DSA-65 keygen", 600, func() { k, _ := mldsa.GenerateKey(mldsa.MLDSA65()); sink += len(k.PublicKey().Bytes()) }},
		{"ML-DSA-65 sign", 400, func() { s, _ := k65.Sign(nil, msg, nil); sink += len(s) }},
		{"ML-DSA-65 verify", 1000, func() {
			if mldsa.Verify(k65.PublicKey(), msg, s65, nil) == nil {
				sink++
			}
		}},
		{"ML-DSA-87 keygen", 400, func() { k, _ := mldsa.GenerateKey(mldsa.MLDSA87()); sink += len(k.PublicKey().Bytes()) }},
		{"ML-DSA-87 sign", 300, func() { s, _ := k87.Sign(nil, msg, nil); sink += len(s) }},
		{"ML-DSA-87 verify", 800, func() {
			if mldsa.Verify(k87.PublicKey(), msg, s87, nil) == nil {
				sink++
			}
		}},
	}
	for _, o := range ops { // warm-up
		for i := 0; i < o.n/10+1; i++ {
			o.body()
		}
	}
	times := map[string][]float64{}
	cpus := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		for i := range ops {
			o := ops[(r+i)%len(ops)]
			c := cpuMicros()
			t := time.Now()
			for j := 0; j < o.n; j++ {
				o.body()
			}
			times[o.name] = append(times[o.name], float64(time.Since(t).Nanoseconds())/1e3/float64(o.n))
			cpus[o.name] = append(cpus[o.name], (cpuMicros()-c)/float64(o.n))
		}
	}
	median := func(xs []float64) float64 {
		s := append([]float64(nil), xs...)
		sort.Float64s(s)
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	fmt.Printf("Go %s crypto/mldsa and crypto/ecdsa, %d rounds; µs per operation: median wall (min–max), median CPU (the process's)\n", runtimeVersion(), rounds)
	base := map[string]string{"keygen": "P-256 keygen", "sign": "P-256 sign", "verify": "P-256 verify"}
	for _, o := range ops {
		xs := times[o.name]
		s := append([]float64(nil), xs...)
		sort.Float64s(s)
		ratio := ""
		if o.name[:2] == "ML" {
			kind := "verify"
			if contains(o.name, "keygen") {
				kind = "keygen"
			} else if contains(o.name, "sign") {
				kind = "sign"
			}
			ratio = fmt.Sprintf("  %.1fx P-256 (CPU %.1fx)", median(xs)/median(times[base[kind]]),
				median(cpus[o.name])/median(cpus[base[kind]]))
		}
		fmt.Printf("%-62s %.1f µs (%.1f–%.1f), CPU %.1f µs  ×%d%s\n", o.name, median(xs), s[0], s[len(s)-1],
			median(cpus[o.name]), o.n, ratio)
	}
	if sink == 42 {
		fmt.Println()
	}
}

// cpuMicros is the process's user + system CPU time in µs (the benchmark runs on one goroutine; GOMAXPROCS=1 keeps
// the garbage collector's work on the same CPU budget).
func cpuMicros() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec)*1e6 + float64(ru.Utime.Usec+ru.Stime.Usec)
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func serve(certFile, keyFile string) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		die(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
	if err != nil {
		die(err)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	for {
		c, err := ln.Accept()
		if err != nil {
			continue
		}
		go func(c net.Conn) {
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if err := c.(*tls.Conn).Handshake(); err != nil {
				return
			}
			buf := make([]byte, 1024)
			c.Read(buf) // the request (one read: it is one small record)
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"))
		}(c)
	}
}

func load(addr, group string, seconds float64, conns int) {
	var curve tls.CurveID
	switch group {
	case "x25519":
		curve = tls.X25519
	case "x25519mlkem768":
		curve = tls.X25519MLKEM768
	default:
		die(fmt.Errorf("unknown group %q", group))
	}
	config := &tls.Config{InsecureSkipVerify: true, ServerName: "localhost", MinVersion: tls.VersionTLS13,
		CurvePreferences: []tls.CurveID{curve}}
	var done, failed atomic.Int64
	var seen atomic.Value
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256)
			request := []byte("GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
			for time.Now().Before(deadline) {
				c, err := tls.Dial("tcp", addr, config)
				if err != nil {
					failed.Add(1)
					continue
				}
				st := c.ConnectionState()
				c.Write(request)
				c.Read(buf)
				c.Close()
				done.Add(1)
				if seen.Load() == nil {
					seen.Store(fmt.Sprintf("%s %s", st.CurveID, signatureScheme(st)))
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	s, _ := seen.Load().(string)
	fmt.Printf("%.1f %d %d %s\n", float64(done.Load())/elapsed, done.Load(), failed.Load(), s)
}

func signatureScheme(st tls.ConnectionState) string {
	if len(st.PeerCertificates) == 0 {
		return "?"
	}
	return fmt.Sprintf("%T", st.PeerCertificates[0].PublicKey)
}

func main() {
	if len(os.Args) < 2 {
		die(fmt.Errorf("usage: crypto ROUNDS | serve CERT KEY | load HOST:PORT GROUP SECONDS CONNS"))
	}
	switch os.Args[1] {
	case "crypto":
		r, _ := strconv.Atoi(os.Args[2])
		cryptoBench(r)
	case "serve":
		serve(os.Args[2], os.Args[3])
	case "load":
		secs, _ := strconv.ParseFloat(os.Args[4], 64)
		n, _ := strconv.Atoi(os.Args[5])
		load(os.Args[2], os.Args[3], secs, n)
	default:
		die(fmt.Errorf("unknown mode %q", os.Args[1]))
	}
}
