package main

import (
	"context"
	"errors"
)

func runReport(ctx context.Context, args []string, io streams, getenv func(string) string, environ []string) error {
	return errors.New("report is not implemented yet")
}
