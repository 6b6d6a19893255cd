// Command s3server runs github.com/johannesboyne/gofakes3 (an
// S3-compatible server written elsewhere, in-memory backend) on a
// loopback port for the cluster tests: the head uploads its publish
// directory there with minio-go and mirror nodes read it back.
//
//	s3server -bucket NAME     prints host:port on stdout, serves until killed
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	bucket := flag.String("bucket", "scimbridge", "bucket to create")
	listen := flag.String("listen", "127.0.0.1:0", "address")
	flag.Parse()
	backend := s3mem.New()
	if err := backend.CreateBucket(*bucket); err != nil {
		log.Fatal(err)
	}
	faker := gofakes3.New(backend, gofakes3.WithAutoBucket(false))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(os.Stdout, ln.Addr().String())
	log.Fatal(http.Serve(ln, faker.Server()))
}
