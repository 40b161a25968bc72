package remote

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/colio-dev/colio/internal/errs"
)

// Transports are shared by the sources whose options give the same
// transport, so that opening many objects of one host reuses its
// connections (and TLS sessions) instead of paying a handshake per file.
var (
	transportsMu sync.Mutex
	transports   = map[string]*http.Transport{}
)

// transportFor returns the transport for o: a keep-alive pool of
// max_in_flight connections per host (a request in flight holds one
// connection with HTTP/1.1, and idle ones stay for the next burst), HTTP/2
// where TLS offers it, proxies from the environment, the system roots plus
// ca_bundle, and the connect and first-byte timeouts. Compression is off:
// a range is of the stored bytes, and the body goes straight into the
// caller's buffer.
func transportFor(o Options) (*http.Transport, error) {
	key := fmt.Sprintf("%d|%v|%v|%q", o.MaxInFlight, o.ConnectTimeout, o.FirstByteTimeout, o.CABundle)
	transportsMu.Lock()
	defer transportsMu.Unlock()
	if t, ok := transports[key]; ok {
		return t, nil
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CABundle != "" {
		pem, err := os.ReadFile(o.CABundle)
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "colio: ca_bundle %q", o.CABundle)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errs.New(errs.Invalid, "colio: ca_bundle %q holds no PEM certificate", o.CABundle)
		}
		tlsCfg.RootCAs = pool
	}
	d := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   o.ConnectTimeout,
		ResponseHeaderTimeout: o.FirstByteTimeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          o.MaxInFlight,
		MaxIdleConnsPerHost:   o.MaxInFlight,
		MaxConnsPerHost:       o.MaxInFlight,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
		DisableCompression:    true,
	}
	transports[key] = t
	return t, nil
}
