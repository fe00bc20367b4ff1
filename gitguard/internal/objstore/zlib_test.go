package objstore

import (
	"compress/zlib"
	"io"
)

func zlibWriter(w io.Writer) io.WriteCloser { return zlib.NewWriter(w) }
