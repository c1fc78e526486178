module github.com/benchkite/benchkite/tools/screenshots

go 1.26

require github.com/yuin/goldmark v1.8.7
