// go-h2-sender: a peer beside h2load and pushworker-curl-floor in `make bench-peers`
// (docs/performance.md). Go's standard net/http client over HTTP/2 — the transport gorush and
// apns2 are built on (golang.org/x/net/http2, bundled in net/http) — sending one request N
// times with C connections x S streams, like h2load.
//
// Same command line as the h2load subset the benches use:
//
//	go-h2-sender -n N -c CONNECTIONS -m STREAMS -d BODYFILE [-H 'name: value']... URL
//
// One http.Transport per connection (each keeps exactly one HTTP/2 connection: one warm-up
// request opens it before the clock starts), S goroutines per transport, each POSTing the body
// and draining the answer. Like h2load it does not verify the server certificate. Prints one
// line: "requests: N total, K succeeded, R req/s, cpu S s, U us/request (goX.Y net/http)",
// CPU = getrusage(RUSAGE_SELF) over the sending phase (the bench measures the whole process
// with wait4, as for h2load). Exit 0 when every request got a 2xx. Standard library only.
package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go-h2-sender -n N -c CONNECTIONS -m STREAMS -d BODYFILE [-H 'name: value']... URL")
	os.Exit(64)
}

func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return float64(usage.Utime.Sec) + float64(usage.Utime.Usec)/1e6 + float64(usage.Stime.Sec) + float64(usage.Stime.Usec)/1e6
}

type header struct{ name, value string }

func main() {
	total, connections, streams := 0, 1, 1
	bodyPath, url := "", ""
	var headers []header
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		next := func() string {
			if i+1 >= len(args) {
				usage()
			}
			i++
			return args[i]
		}
		number := func() int {
			value, err := strconv.Atoi(next())
			if err != nil {
				usage()
			}
			return value
		}
		switch args[i] {
		case "-n":
			total = number()
		case "-c":
			connections = number()
		case "-m":
			streams = number()
		case "-d":
			bodyPath = next()
		case "-H":
			line := next()
			colon := strings.Index(line, ":")
			if colon <= 0 {
				usage()
			}
			headers = append(headers, header{strings.TrimSpace(line[:colon]), strings.TrimSpace(line[colon+1:])})
		default:
			if strings.HasPrefix(args[i], "-") || url != "" {
				usage()
			}
			url = args[i]
		}
	}
	if url == "" || bodyPath == "" || total <= 0 || connections <= 0 || streams <= 0 {
		usage()
	}
	body, err := os.ReadFile(bodyPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(66)
	}

	newRequest := func() (*http.Request, error) {
		request, err := http.NewRequest("POST", url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		for _, h := range headers {
			request.Header.Set(h.name, h.value)
		}
		request.Header["User-Agent"] = []string{""} // h2load sends none either
		return request, nil
	}
	send := func(client *http.Client) bool {
		request, err := newRequest()
		if err != nil {
			return false
		}
		response, err := client.Do(request)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, response.Body)
		_ = response.Body.Close()
		return response.StatusCode >= 200 && response.StatusCode < 300 && response.ProtoMajor == 2
	}

	clients := make([]*http.Client, connections)
	for index := range clients {
		transport := &http.Transport{
			TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
			ForceAttemptHTTP2:   true,
			MaxConnsPerHost:     1,
			MaxIdleConnsPerHost: 1,
			DisableCompression:  true,
		}
		clients[index] = &http.Client{Transport: transport, Timeout: 60 * time.Second}
		if !send(clients[index]) { // opens the connection (TLS, ALPN h2); not counted
			fmt.Fprintln(os.Stderr, "request failed: warm-up request on connection", index)
		}
	}

	var next, succeeded, failed int64
	var wait sync.WaitGroup
	started, cpuStart := time.Now(), cpuSeconds()
	for _, client := range clients {
		for stream := 0; stream < streams; stream++ {
			wait.Add(1)
			go func(client *http.Client) {
				defer wait.Done()
				for atomic.AddInt64(&next, 1) <= int64(total) {
					if send(client) {
						atomic.AddInt64(&succeeded, 1)
					} else if atomic.AddInt64(&failed, 1) <= 3 {
						fmt.Fprintln(os.Stderr, "request failed")
					}
				}
			}(client)
		}
	}
	wait.Wait()
	wall, cpu := time.Since(started).Seconds(), cpuSeconds()-cpuStart
	finished := succeeded + failed
	rate, perRequest := 0.0, 0.0
	if wall > 0 {
		rate = float64(finished) / wall
	}
	if finished > 0 {
		perRequest = cpu / float64(finished) * 1e6
	}
	fmt.Printf("requests: %d total, %d succeeded, %.0f req/s, cpu %.3f s, %.2f us/request (%s net/http, GOMAXPROCS %d)\n",
		total, succeeded, rate, cpu, perRequest, runtime.Version(), runtime.GOMAXPROCS(0))
	if succeeded != int64(total) {
		os.Exit(1)
	}
}
