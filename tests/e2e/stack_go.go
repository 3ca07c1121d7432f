// The goroutine tier of the real-stack test (docs/e2e.md): Go's net/http
// server, a goroutine per connection serving its requests, many requests in
// flight at once. Outgoing calls go through one http.Transport (a pool of
// keep-alive connections per server, bound to this tier's own loopback
// address so the capture tells the tiers apart) and forward X-Request-Id.
// Like the Go frontend of Online Boutique, a request calls one service
// several times in a row and others in parallel.
//
//	GET /shop/K   java /cart/K; java /product/K?i=0..5, six in a row; then
//	              java /recommend/K and py1 /quote/K in parallel
//	GET /ship/K   py1 /quote/K and node /price/K in parallel
//
//	stack_go LISTEN_IP PORT JAVA_ADDR PY_ADDR NODE_ADDR   (ADDR = IP:PORT)
//
// Standard library only: tests/e2e/real_stack.py builds it with
// `go build` and no network (GOPROXY=off).
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

const products = 6

var (
	client                     *http.Client
	javaAddr, pyAddr, nodeAddr string
)

// get calls http://addr+path with the request's id and returns the body.
func get(addr, path, rid string) (string, error) {
	req, err := http.NewRequest("GET", "http://"+addr+path, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Request-Id", rid)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: HTTP %d", path, resp.StatusCode)
	}
	return string(body), nil
}

// parallel runs the calls at once, each in its own goroutine, and returns
// their bodies in order, or the first error.
func parallel(calls ...func() (string, error)) ([]string, error) {
	out := make([]string, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Add(1)
		go func(i int, call func() (string, error)) {
			defer wg.Done()
			out[i], errs[i] = call()
		}(i, call)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func shop(key, rid string) (string, error) {
	cart, err := get(javaAddr, "/cart/"+key, rid)
	if err != nil {
		return "", err
	}
	parts := []string{cart}
	for i := 0; i < products; i++ {
		p, err := get(javaAddr, fmt.Sprintf("/product/%s?i=%d", key, i), rid)
		if err != nil {
			return "", err
		}
		parts = append(parts, p)
	}
	more, err := parallel(
		func() (string, error) { return get(javaAddr, "/recommend/"+key, rid) },
		func() (string, error) { return get(pyAddr, "/quote/"+key, rid) })
	if err != nil {
		return "", err
	}
	return strings.Join(append(parts, more...), ","), nil
}

func ship(key, rid string) (string, error) {
	out, err := parallel(
		func() (string, error) { return get(pyAddr, "/quote/"+key, rid) },
		func() (string, error) { return get(nodeAddr, "/price/"+key, rid) })
	if err != nil {
		return "", err
	}
	return strings.Join(out, ","), nil
}

func handle(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(r.URL.Path, "/")
	key := "k"
	if len(parts) > 2 {
		key = parts[2]
	}
	rid := r.Header.Get("X-Request-Id")
	var body string
	var err error
	switch parts[1] {
	case "shop":
		body, err = shop(key, rid)
	case "ship":
		body, err = ship(key, rid)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, body)
}

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: stack_go LISTEN_IP PORT JAVA_ADDR PY_ADDR NODE_ADDR")
		os.Exit(2)
	}
	listen := net.JoinHostPort(os.Args[1], os.Args[2])
	javaAddr, pyAddr, nodeAddr = os.Args[3], os.Args[4], os.Args[5]
	dialer := &net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP(os.Args[1])},
		Timeout:   10 * time.Second,
	}
	client = &http.Client{
		Timeout: 15 * time.Second,
		Transport: &http.Transport{
			DialContext: dialer.DialContext,
			// Keep a connection per request in flight: Go's default of
			// two idle connections per server would open and close one per
			// call under load.
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     0,
		},
	}
	srv := &http.Server{Addr: listen, Handler: http.HandlerFunc(handle)}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
