{{/*
cniGC.dataDirs: the host-local data directories to mount (cni.hostLocalDataDir, then
cni.hostLocalDataDirs), as a JSON array: each once, but those under cni.cacheDir, which
is mounted whole.
*/}}
{{- define "cniGC.dataDirs" -}}
{{- $cache := printf "%s/" (trimSuffix "/" .Values.cni.cacheDir) -}}
{{- $out := list -}}
{{- range (prepend .Values.cni.hostLocalDataDirs .Values.cni.hostLocalDataDir) -}}
{{- $d := trimSuffix "/" . -}}
{{- if and $d (not (hasPrefix $cache (printf "%s/" $d))) (not (has $d $out)) -}}
{{- $out = append $out $d -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
