package remote

import "math"

// S3 sink defaults. DefaultPartSize comes from the sweep in sink.go's
// package note (docs/remote.md); DefaultBufferSize bounds the bytes of
// complete parts a sink holds (uploading or waiting for a connection).
const (
	// MinPartSize is S3's smallest part but the last.
	MinPartSize = 5 << 20
	// MaxPartSize is S3's largest part.
	MaxPartSize = 5 << 30
	// MaxParts is S3's most parts in one upload.
	MaxParts = 10000

	DefaultPartSize   = 8 << 20
	DefaultBufferSize = 512 << 20
)

func init() {
	options["part_size"] = option{env: "COLIO_S3_PART_SIZE", s3: true, set: func(o *Options, v string) error {
		n, err := intIn(v, MinPartSize, MaxPartSize)
		o.PartSize = n
		return err
	}}
	options["buffer_size"] = option{env: "COLIO_S3_BUFFER_SIZE", s3: true, set: func(o *Options, v string) error {
		n, err := intIn(v, MinPartSize, math.MaxInt64)
		o.BufferSize = n
		return err
	}}
}
