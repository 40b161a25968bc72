module github.com/colio-dev/colio

go 1.26.8

require golang.org/x/sys v0.50.0
