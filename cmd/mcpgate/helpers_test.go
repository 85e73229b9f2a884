package main

import (
	"context"
	"testing"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gateway/server"
)

func seedWorkspace(t *testing.T, url, ws string) {
	t.Helper()
	s, err := server.OpenStore(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutWorkspace(context.Background(), &gateway.Workspace{ID: ws, Name: ws, Slug: ws}); err != nil {
		t.Fatal(err)
	}
}
