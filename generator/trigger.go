package main

import (
	"context"
	"errors"
)

func runTrigger(ctx context.Context, args []string, io ioStreams, getenv func(string) string) error {
	return &exitError{code: 2, err: errors.New("trigger is not available in this build yet")}
}
