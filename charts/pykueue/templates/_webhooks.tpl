{{/*
The admission endpoints the webhook serves, one entry per path. This is the single list both
webhook configurations are rendered from; tests/unit/test_chart.py checks it against the paths
the webhook program registers (webhook/registry.py).
  kind:      "job" entries get the namespace/object selectors; "kueue" entries see every object.
  resources: plural of the object (and subresources); group/versions/scope as in the API.
The kueue.x-k8s.io hooks sit at Kueue's v1beta2 paths and list both served versions, v1beta2
first, so the apiserver sends each object in the version its client wrote and converts none for
admission (webhook/registry.py says why; the program still serves the v1beta1 paths of earlier
releases' configurations).
*/}}
{{- define "pykueue.webhookEndpoints" -}}
mutating:
  - {name: mjob.kb.io, path: /mutate-batch-v1-job, group: batch, versions: [v1], resources: [jobs], operations: [CREATE], scope: Namespaced, target: job}
  - {name: mclusterqueue.kb.io, path: /mutate-kueue-x-k8s-io-v1beta2-clusterqueue, group: kueue.x-k8s.io, versions: [v1beta2, v1beta1], resources: [clusterqueues], operations: [CREATE], scope: Cluster, target: kueue}
  - {name: mresourceflavor.kb.io, path: /mutate-kueue-x-k8s-io-v1beta2-resourceflavor, group: kueue.x-k8s.io, versions: [v1beta2, v1beta1], resources: [resourceflavors], operations: [CREATE], scope: Cluster, target: kueue}
  - {name: mworkload.kb.io, path: /mutate-kueue-x-k8s-io-v1beta2-workload, group: kueue.x-k8s.io, versions: [v1beta2, v1beta1], resources: [workloads], operations: [CREATE], scope: Namespaced, target: kueue}
validating:
  - {name: vjob.kb.io, path: /validate-batch-v1-job, group: batch, versions: [v1], resources: [jobs], operations: [CREATE, UPDATE], scope: Namespaced, target: job}
  - {name: vclusterqueue.kb.io, path: /validate-kueue-x-k8s-io-v1beta2-clusterqueue, group: kueue.x-k8s.io, versions: [v1beta2, v1beta1], resources: [clusterqueues], operations: [CREATE, UPDATE], scope: Cluster, target: kueue}
  - {name: vcohort.kb.io, path: /validate-kueue-x-k8s-io-v1beta2-cohort, group: kueue.x-k8s.io, versions: [v1beta2, v1beta1], resources: [cohorts], operations: [CREATE, UPDATE], scope: Cluster, target: kueue}
  - {name: vlocalqueue.kb.io, path: /validate-kueue-x-k8s-io-v1beta2-localqueue, group: kueue.x-k8s.io, versions: [v1beta2, v1beta1], resources: [localqueues], operations: [CREATE, UPDATE], scope: Namespaced, target: kueue}
  - {name: vresourceflavor.kb.io, path: /validate-kueue-x-k8s-io-v1beta2-resourceflavor, group: kueue.x-k8s.io, versions: [v1beta2, v1beta1], resources: [resourceflavors], operations: [CREATE, UPDATE], scope: Cluster, target: kueue}
  - {name: vworkload.kb.io, path: /validate-kueue-x-k8s-io-v1beta2-workload, group: kueue.x-k8s.io, versions: [v1beta2, v1beta1], resources: [workloads, workloads/status], operations: [CREATE, UPDATE], scope: Namespaced, target: kueue}
  - {name: vadmissioncheck.kb.io, path: /validate-kueue-x-k8s-io-v1beta2-admissioncheck, group: kueue.x-k8s.io, versions: [v1beta2, v1beta1], resources: [admissionchecks], operations: [CREATE, UPDATE], scope: Cluster, target: kueue}
{{- end -}}

{{/* One webhook entry. Called with (dict "root" $ "hook" $entry "mutating" bool). */}}
{{- define "pykueue.webhookEntry" -}}
{{- $root := .root -}}
{{- $hook := .hook -}}
- name: {{ $hook.name }}
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: {{ $root.Values.webhook.failurePolicy }}
  timeoutSeconds: {{ $root.Values.webhook.timeoutSeconds }}
  matchPolicy: Equivalent
  {{- if .mutating }}
  reinvocationPolicy: Never
  {{- end }}
  clientConfig:
    {{- with $root.Values.webhook.externalURL }}
    {{- /* values.schema.json admits only https:// URLs here. */}}
    url: {{ printf "%s%s" (trimSuffix "/" .) $hook.path | quote }}
    {{- else }}
    service:
      name: {{ include "pykueue.webhook.serviceName" $root }}
      namespace: {{ $root.Release.Namespace }}
      path: {{ $hook.path }}
      port: {{ $root.Values.webhook.servicePort }}
    {{- end }}
  rules:
    - apiGroups: [{{ $hook.group | quote }}]
      apiVersions: {{ toJson $hook.versions }}
      resources: {{ toJson $hook.resources }}
      operations: {{ toJson $hook.operations }}
      scope: {{ $hook.scope }}
  {{- if eq $hook.target "job" }}
  namespaceSelector:
    {{- include "pykueue.jobNamespaceSelector" $root | nindent 4 }}
  {{- /* Without manageJobsWithoutQueueName only labelled Jobs need validating; the mutating
       hook still sees every Job so it can default the queue name from a LocalQueue "default". */}}
  {{- if and (not .mutating) (not $root.Values.controller.config.manageJobsWithoutQueueName) }}
  objectSelector:
    matchExpressions:
      - key: kueue.x-k8s.io/queue-name
        operator: Exists
  {{- end }}
  {{- end }}
{{- end -}}
