module github.com/colio-dev/colio

go 1.26.8

require (
	golang.org/x/sys v0.50.0
	gorgonia.org/cu v0.9.6
)

require (
	github.com/google/uuid v1.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
)
