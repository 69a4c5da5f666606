{{/* The chart's name. */}}
{{- define "wasmcm.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the objects: the release name when it contains the chart name (release
"wasmcm" gives "wasmcm", as in deploy/manifests), else <release>-<chart>. */}}
{{- define "wasmcm.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "wasmcm.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* What selects the pods (Deployment, Service, PodDisruptionBudget, anti-affinity). */}}
{{- define "wasmcm.selectorLabels" -}}
app.kubernetes.io/name: {{ include "wasmcm.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The standard labels of every object. */}}
{{- define "wasmcm.labels" -}}
{{ include "wasmcm.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller-manager
app.kubernetes.io/part-of: wasmcm
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "wasmcm.chart" . }}
{{- end }}

{{- define "wasmcm.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "wasmcm.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "wasmcm.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The built-in plugins, in the order of the default manifest compiled into the binary. */}}
{{- define "wasmcm.builtins" -}}
replicaset deployment rollback job cronjob ttlafterfinished
{{- end }}

{{/* Fails on values that would render a broken or unsafe install. */}}
{{- define "wasmcm.validate" -}}
{{- if and (not .Values.leaderElection.enabled) (gt (int .Values.replicaCount) 1) }}
{{- fail "leaderElection.enabled=false needs replicaCount: 1 (replicas without leader election would all write)" }}
{{- end }}
{{- $known := splitList " " (include "wasmcm.builtins" .) }}
{{- range $name, $_ := .Values.plugins.builtin }}
{{- if not (has $name $known) }}
{{- fail (printf "plugins.builtin.%s: not a built-in plugin (built-ins: %s)" $name (join ", " $known)) }}
{{- end }}
{{- end }}
{{- $bytes := 0 }}
{{- range $file, $base64 := .Values.plugins.files }}
{{- $bytes = add $bytes (div (mul (len (nospace $base64)) 3) 4) }}
{{- if not (regexMatch "^[-._a-zA-Z0-9]+$" $file) }}
{{- fail (printf "plugins.files: %q is not a ConfigMap key (letters, digits, '-', '_', '.')" $file) }}
{{- end }}
{{- if not (regexMatch "^[A-Za-z0-9+/]+={0,2}$" (nospace $base64)) }}
{{- fail (printf "plugins.files.%s: not base64 (base64 -w0 %s > %s.b64, then --set-file 'plugins.files.%s=%s.b64')" $file $file $file (replace "." "\\." $file) $file) }}
{{- end }}
{{- end }}
{{- if gt (int $bytes) 1048576 }}
{{- fail (printf "plugins.files: about %d bytes in all; a ConfigMap holds at most 1 MiB (1048576)" (int $bytes)) }}
{{- end }}
{{- range $i, $p := .Values.plugins.extra }}
{{- $name := dig "metadata" "name" "" $p }}
{{- if not $name }}
{{- fail (printf "plugins.extra[%d]: needs metadata.name" $i) }}
{{- end }}
{{- if not (dig "spec" "source" nil $p) }}
{{- fail (printf "plugins.extra[%d] (%s): needs spec.source (builtin, file or configMap)" $i $name) }}
{{- end }}
{{- end }}
{{- end }}

{{/* "true" or "false": whether the built-in plugin named by .name runs (absent from
plugins.builtin: it runs, as in the default manifest). Call with (dict "root" $ "name" $name). */}}
{{- define "wasmcm.builtinEnabled" -}}
{{- $on := true }}
{{- if hasKey .root.Values.plugins.builtin .name }}
{{- $on = index .root.Values.plugins.builtin .name }}
{{- end }}
{{- ternary "true" "false" (ne $on false) }}
{{- end }}

{{/* The built-ins that run with an identity of their own (templates/plugin-identities.yaml):
the enabled ones not replaced by an entry of plugins.extra, space-separated. */}}
{{- define "wasmcm.identities" -}}
{{- $extraNames := list }}
{{- range (.Values.plugins.extra | default list) }}
{{- $extraNames = append $extraNames .metadata.name }}
{{- end }}
{{- $names := list }}
{{- range $name := splitList " " (include "wasmcm.builtins" .) }}
{{- if and (not (has $name $extraNames)) (eq (include "wasmcm.builtinEnabled" (dict "root" $ "name" $name)) "true") }}
{{- $names = append $names $name }}
{{- end }}
{{- end }}
{{- join " " $names }}
{{- end }}
