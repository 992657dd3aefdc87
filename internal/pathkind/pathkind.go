// Package pathkind tells what a path given in options or on a command line
// names, as every program and adapter of the module checks it before use:
// nothing, a directory, a regular file, something else, a symbolic link to
// nothing, or a path that is there and whose every use fails (a loop of
// symbolic links) or that cannot be looked at.
package pathkind

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Kind is what a path names, following symbolic links.
type Kind int

const (
	// Missing: nothing is there.
	Missing Kind = iota
	// Dir: a directory.
	Dir
	// File: a regular file.
	File
	// Other: something else that is there (a named pipe, a device, a
	// socket).
	Other
	// Loop: a chain of symbolic links that loops (ELOOP), or is longer
	// than the kernel follows: it is there, names nothing, and every use
	// of it fails.
	Loop
	// Unreadable: the path cannot be looked at (the permissions of a
	// directory on the way, say): what it names is not known.
	Unreadable
	// Dangling: the path is a symbolic link (or a chain of them) whose end
	// is missing: it is there, and names nothing now; what it names may
	// appear at its target (a directory not mounted yet, or not in this
	// mount namespace). So is a path below such a link (a link on the way
	// that leads nowhere): what it names may appear there too.
	Dangling
)

// Of returns what path names, with its FileInfo (nil unless Dir, File or
// Other) and the error of looking it up (nil for Dir, File and Other; one
// that matches fs.ErrNotExist for Missing and Dangling).
func Of(path string) (Kind, fs.FileInfo, error) {
	info, err := os.Stat(path)
	switch {
	case err == nil && info.IsDir():
		return Dir, info, nil
	case err == nil && info.Mode().IsRegular():
		return File, info, nil
	case err == nil:
		return Other, info, nil
	case errors.Is(err, fs.ErrNotExist):
		// The nearest of the path and its parents that is there: a link whose end is not (the path itself, or a
		// link on the way) makes it Dangling; anything else, Missing.
		for p := path; ; p = filepath.Dir(p) {
			if _, lerr := os.Lstat(p); lerr == nil {
				if _, serr := os.Stat(p); errors.Is(serr, fs.ErrNotExist) {
					return Dangling, nil, err
				}
				return Missing, nil, err
			}
			if filepath.Dir(p) == p {
				return Missing, nil, err
			}
		}
	case errors.Is(err, syscall.ELOOP):
		return Loop, nil, err
	}
	return Unreadable, nil, err
}
