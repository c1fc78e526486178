package bkapitest

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// The real API's page sizes.
const (
	defaultPerPage = 30
	maxPerPage     = 100
)

type pageRange struct{ start, end int }

// countParam is the query parameter name, a whole number from 1 up, or
// def when it is absent; one that is not answers 400 as the API does.
func countParam(w http.ResponseWriter, q url.Values, name string, def int) (int, bool) {
	v := q.Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Invalid " + name})
		return 0, false
	}
	return n, true
}

// paginate picks the page the request asks for and sets the Link header
// the way the real API does: next and last while there are more pages,
// first and prev after the first.
func (s *Server) paginate(w http.ResponseWriter, r *http.Request, total int) (pageRange, bool) {
	q := r.URL.Query()
	page, ok := countParam(w, q, "page", 1)
	if !ok {
		return pageRange{}, false
	}
	perPage, ok := countParam(w, q, "per_page", defaultPerPage)
	if !ok {
		return pageRange{}, false
	}
	perPage = min(perPage, maxPerPage)
	if s.MaxPerPage > 0 {
		perPage = min(perPage, s.MaxPerPage)
	}
	last := max(1, (total+perPage-1)/perPage)
	link := func(p int, rel string) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(perPage))
		u := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawQuery: q.Encode()}
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(min(page-1, last), "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", joinLinks(links))
	}
	start := min((page-1)*perPage, total)
	return pageRange{start: start, end: min(start+perPage, total)}, true
}

func joinLinks(links []string) string {
	out := links[0]
	for _, l := range links[1:] {
		out += ", " + l
	}
	return out
}
