{{/*
Names. Every object is prefixed with the full name ("pykueue" for a release called pykueue), so the
defaults match the programs' built-in names: pykueue-webhook-service, pykueue-webhook-server-cert
and the service account pykueue-controller that the webhook trusts for controller-only writes
(the chart passes all three to the webhook explicitly, so other release names work too).
*/}}
{{- define "pykueue.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "pykueue.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains (include "pykueue.name" .) .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "pykueue.name" .) | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "pykueue.controller.name" -}}{{ include "pykueue.fullname" . }}-controller{{- end -}}
{{- define "pykueue.webhook.name" -}}{{ include "pykueue.fullname" . }}-webhook{{- end -}}
{{- define "pykueue.webhook.serviceName" -}}{{ include "pykueue.fullname" . }}-webhook-service{{- end -}}
{{- define "pykueue.visibility.serviceName" -}}{{ include "pykueue.fullname" . }}-visibility-server{{- end -}}
{{- define "pykueue.visibility.secretName" -}}{{ include "pykueue.fullname" . }}-visibility-server-cert{{- end -}}
{{- define "pykueue.webhook.secretName" -}}{{ include "pykueue.fullname" . }}-webhook-server-cert{{- end -}}
{{/*
The webhook configurations keep these fixed names whatever the release is called: the webhook
program injects its CA bundle into exactly these two objects (webhook/registry.py), so pykueue
is installed once per cluster, like any cluster-wide admission webhook.
*/}}
{{- define "pykueue.mutatingName" -}}pykueue-mutating-webhook-configuration{{- end -}}
{{- define "pykueue.validatingName" -}}pykueue-validating-webhook-configuration{{- end -}}
{{- define "pykueue.configName" -}}{{ include "pykueue.fullname" . }}-manager-config{{- end -}}
{{- define "pykueue.certificateName" -}}{{ include "pykueue.fullname" . }}-serving-cert{{- end -}}
{{- define "pykueue.issuerName" -}}{{ include "pykueue.fullname" . }}-selfsigned-issuer{{- end -}}

{{- define "pykueue.controller.username" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "pykueue.controller.name" . }}
{{- end -}}

{{- define "pykueue.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "pykueue.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "pykueue.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component ("controller" or "webhook"); never change across upgrades. */}}
{{- define "pykueue.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pykueue.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "pykueue.componentLabels" -}}
{{ include "pykueue.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The path inside the containers where the Configuration is mounted. */}}
{{- define "pykueue.configPath" -}}/etc/pykueue/config.yaml{{- end -}}

{{/* The cert-manager annotation that makes its CA injector fill in caBundle. */}}
{{- define "pykueue.injectCA" -}}
{{- if .Values.certManager.enabled }}
cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "pykueue.certificateName" . }}
{{- end }}
{{- end -}}

{{/* Namespaces whose Jobs never reach the webhook: the release's own and the system ones. */}}
{{- define "pykueue.jobNamespaceSelector" -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
      {{- $excluded := concat (list .Release.Namespace) .Values.webhook.excludedNamespaces | uniq }}
      {{- range $excluded }}
      - {{ . | quote }}
      {{- end }}
{{- end -}}
