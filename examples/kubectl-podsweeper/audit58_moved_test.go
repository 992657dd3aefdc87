package main

import (
	"net/http"
	"sync"
)

// a58Once runs f once, on h's first request, before h answers.
func a58Once(h http.Handler, f func()) http.Handler {
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(f)
		h.ServeHTTP(w, r)
	})
}
