package publish

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/scimbridge/scimbridge/syncd/config"
)

// NewS3Client makes a client for an S3-compatible store. Keys come from
// root-only files; without them requests are anonymous.
func NewS3Client(s config.S3) (*minio.Client, error) {
	var creds *credentials.Credentials
	if s.AccessKeyFile != "" {
		ak, err := readKey(s.AccessKeyFile)
		if err != nil {
			return nil, err
		}
		sk, err := readKey(s.SecretKeyFile)
		if err != nil {
			return nil, err
		}
		creds = credentials.NewStaticV4(ak, sk, "")
	} else {
		creds = credentials.NewStaticV4("", "", "") // anonymous
	}
	c, err := minio.New(s.Endpoint, &minio.Options{Creds: creds, Secure: !s.Insecure, Region: s.Region})
	if err != nil {
		return nil, fmt.Errorf("s3 %s: %w", s.Endpoint, err)
	}
	return c, nil
}

// S3Prefix is prefix as a key prefix: empty, or ending in one "/".
func S3Prefix(prefix string) string {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return ""
	}
	return prefix + "/"
}

func readKey(path string) (string, error) {
	if err := config.CheckSecretFile(path); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// S3Uploader puts published files into a bucket.
type S3Uploader struct {
	c              *minio.Client
	bucket, prefix string
	endpoint       string
}

// NewS3Uploader uploads to s.Bucket under s.Prefix.
func NewS3Uploader(s config.S3) (*S3Uploader, error) {
	c, err := NewS3Client(s)
	if err != nil {
		return nil, err
	}
	return &S3Uploader{c: c, bucket: s.Bucket, prefix: S3Prefix(s.Prefix), endpoint: s.Endpoint}, nil
}

func (u *S3Uploader) Name() string { return "s3://" + u.endpoint + "/" + u.bucket + "/" + u.prefix }

func (u *S3Uploader) Put(ctx context.Context, name, path string) error {
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	if name == ManifestName {
		opts.ContentType, opts.CacheControl = "application/json", "no-cache"
	} else {
		opts.CacheControl = "public, max-age=31536000, immutable"
	}
	_, err := u.c.FPutObject(ctx, u.bucket, u.prefix+name, path, opts)
	return err
}

func (u *S3Uploader) Remove(ctx context.Context, name string) error {
	return u.c.RemoveObject(ctx, u.bucket, u.prefix+name, minio.RemoveObjectOptions{})
}
