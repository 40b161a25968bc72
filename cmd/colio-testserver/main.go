// colio-testserver serves a directory over HTTP and path-style S3 on
// loopback, with injected latency and faults, for colio's C and Python
// tests and the remote benchmark (internal/remote/remotetest says what it
// answers). Its first line on stdout is "listening on http://HOST:PORT";
// it runs until killed or its standard input closes (-stdin).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/colio-dev/colio/internal/remote/remotetest"
)

func main() {
	var opt remotetest.Options
	flag.StringVar(&opt.Dir, "dir", ".", "directory served (/bucket/key is DIR/bucket/key)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.DurationVar(&opt.Latency, "latency", 0, "latency before every answer, e.g. 20ms")
	flag.StringVar(&opt.Region, "region", "us-east-1", "region reported for HEAD /bucket")
	flag.StringVar(&opt.Key, "s3-key", "", "access key whose signatures are verified (with -s3-secret)")
	flag.StringVar(&opt.Secret, "s3-secret", "", "secret key for -s3-key")
	flag.BoolVar(&opt.RequireAuth, "require-auth", false, "refuse unsigned requests (with -s3-key)")
	stdin := flag.Bool("stdin", false, "exit when standard input closes (a parent that dies takes the server with it)")
	flag.Parse()
	s, err := remotetest.Start(opt, *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "colio-testserver:", err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", s.URL)
	os.Stdout.Sync()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	if *stdin {
		go func() {
			io.Copy(io.Discard, os.Stdin)
			stop <- syscall.SIGTERM
		}()
	}
	<-stop
	s.Close()
}
