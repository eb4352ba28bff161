package store

import "testing"

func TestTheS3EndpointComesFromTheEnvironment(t *testing.T) {
	cases := []struct {
		env, host            string
		secure, custom, fail bool
	}{
		{"", "s3.amazonaws.com", true, false, false},
		{"http://127.0.0.1:7070", "127.0.0.1:7070", false, true, false},
		{"https://minio.internal:9000/", "minio.internal:9000", true, true, false},
		{"minio.internal:9000", "minio.internal:9000", true, true, false},
		{"ftp://x", "", false, false, true},
	}
	for _, c := range cases {
		t.Setenv("NIB_S3_ENDPOINT", c.env)
		t.Setenv("AWS_ENDPOINT_URL_S3", "")
		t.Setenv("AWS_ENDPOINT_URL", "")
		host, secure, custom, err := s3Endpoint()
		if (err != nil) != c.fail || host != c.host || secure != c.secure || custom != c.custom {
			t.Errorf("%q: %s %v %v %v", c.env, host, secure, custom, err)
		}
	}
}

func TestAnS3URLSplitsIntoBucketAndPrefix(t *testing.T) {
	for url, want := range map[string][2]string{
		"s3://b":        {"b", ""},
		"s3://b/":       {"b", ""},
		"s3://b/layers": {"b", "layers/"},
		"s3://b/a/b/":   {"b", "a/b/"},
	} {
		bucket, prefix, err := parseS3URL(url)
		if err != nil || bucket != want[0] || prefix != want[1] {
			t.Errorf("%s: %q %q %v", url, bucket, prefix, err)
		}
	}
}
