{{/* ---- names and labels ---- */}}

{{- define "rm.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "rm.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every resource: (dict "root" $ "component" "nats") */}}
{{- define "rm.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{ include "rm.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: reward-mesh
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "rm.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rm.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Matches every pod of the release (NetworkPolicy peers). */}}
{{- define "rm.releasePods" -}}
app.kubernetes.io/name: {{ include "rm.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "rm.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "rm.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Image reference: (dict "image" <image block> "fallback" <image block> "root" $) */}}
{{- define "rm.image" -}}
{{- $fb := default dict .fallback -}}
{{- $repo := default $fb.repository .image.repository -}}
{{- $tag := default (default .root.Chart.AppVersion $fb.tag) .image.tag -}}
{{- $digest := default $fb.digest .image.digest -}}
{{- if $digest -}}
{{- printf "%s@%s" $repo $digest -}}
{{- else -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}
{{- end -}}

{{/* ---- NATS ---- */}}

{{- define "rm.nats.name" -}}{{ include "rm.fullname" . }}-nats{{- end -}}

{{- define "rm.natsUrl" -}}
{{- if .Values.nats.enabled -}}
{{- printf "nats://%s.%s.svc.%s:%d" (include "rm.nats.name" .) .Release.Namespace .Values.clusterDomain (int .Values.nats.port) -}}
{{- else -}}
{{- required "nats.external.url is required when nats.enabled=false" .Values.nats.external.url -}}
{{- end -}}
{{- end -}}

{{- define "rm.natsAuthSecret" -}}
{{- if .Values.nats.enabled -}}
{{- default (printf "%s-nats-auth" (include "rm.fullname" .)) .Values.nats.auth.existingSecret -}}
{{- else -}}
{{- required "nats.external.existingSecret (the users' passwords) is required when nats.enabled=false" .Values.nats.external.existingSecret -}}
{{- end -}}
{{- end -}}

{{- define "rm.streamReplicas" -}}
{{- if .Values.nats.enabled -}}{{ .Values.nats.replicas }}{{- else -}}{{ .Values.nats.external.streamReplicas }}{{- end -}}
{{- end -}}

{{/* The NATS user of service `name`. */}}
{{- define "rm.serviceUser" -}}service-{{ . }}{{- end -}}

{{/* Environment variable (in the NATS pod) holding a user's password. */}}
{{- define "rm.passwordVar" -}}NATS_PASSWORD_{{ . | upper | replace "-" "_" }}{{- end -}}

{{/* Users of the mesh account, in order: admin, trainer, service-<name> per enabled service. */}}
{{- define "rm.natsUsers" -}}
{{- $users := list "admin" "trainer" -}}
{{- range $name, $s := .Values.services -}}
{{- if $s.enabled -}}{{- $users = append $users (include "rm.serviceUser" $name) -}}{{- end -}}
{{- end -}}
{{- toJson $users -}}
{{- end -}}

{{- define "rm.streams" -}}["MESH_ROLLOUTS","MESH_REWARDS","MESH_ADVANTAGES","MESH_DLQ"]{{- end -}}

{{/* services/sdk/src/nats-accounts.ts trainerPermissions("trainer"), as JSON. */}}
{{- define "rm.trainerPermissions" -}}
{{- $pub := list "mesh.rollouts.>" "mesh.advantages.>" "mesh.describe.*" "$JS.API.INFO" -}}
{{- range (include "rm.streams" . | fromJsonArray) -}}{{- $pub = append $pub (printf "$JS.API.STREAM.INFO.%s" .) -}}{{- end -}}
{{- $r := "MESH_REWARDS" -}}
{{- $pub = concat $pub (list (printf "$JS.API.CONSUMER.CREATE.%s" $r) (printf "$JS.API.CONSUMER.CREATE.%s.>" $r) (printf "$JS.API.CONSUMER.INFO.%s.*" $r) "$JS.API.CONSUMER.LIST.MESH_ROLLOUTS" "$JS.API.CONSUMER.NAMES.MESH_ROLLOUTS" (printf "$JS.API.CONSUMER.MSG.NEXT.%s.*" $r) (printf "$JS.API.CONSUMER.DELETE.%s.*" $r) (printf "$JS.ACK.%s.>" $r)) -}}
{{- toJson (dict "publish" (dict "allow" $pub) "subscribe" (dict "allow" (list "_INBOX_trainer.>"))) -}}
{{- end -}}

{{/* servicePermissions({name, domains}) of nats-accounts.ts, as JSON: (dict "root" $ "name" n "domains" d) */}}
{{- define "rm.servicePermissions" -}}
{{- $name := .name -}}
{{- $pub := list (printf "mesh.rewards.*.%s.*" $name) (printf "mesh.dlq.%s" $name) "$JS.API.INFO" -}}
{{- range (include "rm.streams" .root | fromJsonArray) -}}{{- $pub = append $pub (printf "$JS.API.STREAM.INFO.%s" .) -}}{{- end -}}
{{- range .domains -}}
{{- $c := printf "%s--%s" $name . -}}
{{- $pub = concat $pub (list (printf "$JS.API.CONSUMER.CREATE.MESH_ROLLOUTS.%s.mesh.rollouts.%s.>" $c .) (printf "$JS.API.CONSUMER.INFO.MESH_ROLLOUTS.%s" $c) (printf "$JS.API.CONSUMER.MSG.NEXT.MESH_ROLLOUTS.%s" $c) (printf "$JS.ACK.MESH_ROLLOUTS.%s.>" $c)) -}}
{{- end -}}
{{- $sub := list (printf "_INBOX_service-%s.>" $name) (printf "mesh.describe.%s" $name) -}}
{{- toJson (dict "publish" (dict "allow" $pub) "subscribe" (dict "allow" $sub) "allow_responses" true) -}}
{{- end -}}

{{- define "rm.adminPermissions" -}}
{{- toJson (dict "publish" (dict "allow" (list ">")) "subscribe" (dict "allow" (list ">"))) -}}
{{- end -}}

{{/* NATS client environment of one user: (dict "root" $ "user" "trainer") */}}
{{- define "rm.natsEnv" -}}
- name: NATS_URL
  value: {{ include "rm.natsUrl" .root | quote }}
- name: NATS_USER
  value: {{ .user | quote }}
- name: NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "rm.natsAuthSecret" .root }}
      key: {{ .user | quote }}
- name: NATS_INBOX_PREFIX
  value: {{ printf "_INBOX_%s" .user | quote }}
- name: MESH_STREAM_REPLICAS
  value: {{ include "rm.streamReplicas" .root | quote }}
- name: MESH_STREAM_MAX_AGE_SECONDS
  value: {{ .root.Values.mesh.streamMaxAgeSeconds | quote }}
- name: MESH_STREAM_MAX_BYTES
  value: {{ .root.Values.mesh.streamMaxBytes | quote }}
- name: MESH_STREAMS_WAIT_SECONDS
  value: {{ .root.Values.mesh.streamsWaitSeconds | quote }}
- name: LOG_LEVEL
  value: {{ .root.Values.mesh.logLevel | quote }}
{{- if and (not .root.Values.nats.enabled) .root.Values.nats.external.caSecret }}
- name: NATS_TLS_CA_FILE
  value: /etc/reward-mesh/nats-ca/ca.crt
{{- end }}
{{- end -}}

{{/* ---- gRPC security ---- */}}

{{- define "rm.grpcTlsSecret" -}}
{{- default (printf "%s-grpc-tls" (include "rm.fullname" .)) .Values.grpc.tls.existingSecret -}}
{{- end -}}
{{- define "rm.grpcClientTlsSecret" -}}
{{- default (printf "%s-grpc-client-tls" (include "rm.fullname" .)) .Values.grpc.tls.mtls.existingClientSecret -}}
{{- end -}}
{{- define "rm.grpcTokenSecret" -}}
{{- default (printf "%s-grpc-token" (include "rm.fullname" .)) .Values.grpc.token.existingSecret -}}
{{- end -}}

{{/* Server-side gRPC security environment of prefix P: (dict "root" $ "prefix" "LENGTH") */}}
{{- define "rm.grpcServerEnv" -}}
{{- $v := .root.Values.grpc -}}
{{- if $v.tls.enabled }}
- name: {{ .prefix }}_GRPC_TLS_CERT_FILE
  value: /etc/reward-mesh/grpc-tls/tls.crt
- name: {{ .prefix }}_GRPC_TLS_KEY_FILE
  value: /etc/reward-mesh/grpc-tls/tls.key
{{- if $v.tls.mtls.enabled }}
- name: {{ .prefix }}_GRPC_TLS_CLIENT_CA_FILE
  value: /etc/reward-mesh/grpc-tls/ca.crt
{{- end }}
{{- else }}
- name: {{ .prefix }}_GRPC_INSECURE
  value: "1"
{{- end }}
{{- if $v.token.enabled }}
- name: {{ .prefix }}_GRPC_TOKEN_FILE
  value: /etc/reward-mesh/grpc-token/token
{{- end }}
{{- end -}}

{{/* Client-side gRPC security environment (REWARD_MESH_GRPC_*). */}}
{{- define "rm.grpcClientEnv" -}}
{{- $v := .Values.grpc -}}
{{- if $v.tls.enabled }}
- name: REWARD_MESH_GRPC_TLS_CA_FILE
  value: /etc/reward-mesh/grpc-ca/ca.crt
{{- if $v.tls.mtls.enabled }}
- name: REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE
  value: /etc/reward-mesh/grpc-client-tls/tls.crt
- name: REWARD_MESH_GRPC_TLS_CLIENT_KEY_FILE
  value: /etc/reward-mesh/grpc-client-tls/tls.key
{{- end }}
{{- else }}
- name: REWARD_MESH_GRPC_INSECURE
  value: "1"
{{- end }}
{{- if $v.token.enabled }}
- name: REWARD_MESH_GRPC_TOKEN_FILE
  value: /etc/reward-mesh/grpc-token/token
{{- end }}
{{- end -}}

{{/* Volumes: (dict "root" $ "server" bool "client" bool) */}}
{{- define "rm.grpcVolumes" -}}
{{- $v := .root.Values.grpc -}}
{{- if and $v.tls.enabled .server }}
- name: grpc-tls
  secret:
    secretName: {{ include "rm.grpcTlsSecret" .root }}
    defaultMode: 0440
    items: [{key: tls.crt, path: tls.crt}, {key: tls.key, path: tls.key}, {key: ca.crt, path: ca.crt}]
{{- end }}
{{- if and $v.tls.enabled .client }}
- name: grpc-ca
  secret:
    secretName: {{ include "rm.grpcTlsSecret" .root }}
    defaultMode: 0440
    items: [{key: ca.crt, path: ca.crt}]
{{- if $v.tls.mtls.enabled }}
- name: grpc-client-tls
  secret:
    secretName: {{ include "rm.grpcClientTlsSecret" .root }}
    defaultMode: 0440
    items: [{key: tls.crt, path: tls.crt}, {key: tls.key, path: tls.key}]
{{- end }}
{{- end }}
{{- if $v.token.enabled }}
- name: grpc-token
  secret:
    secretName: {{ include "rm.grpcTokenSecret" .root }}
    defaultMode: 0440
    items: [{key: {{ $v.token.key | quote }}, path: token}]
{{- end }}
{{- end -}}

{{- define "rm.grpcVolumeMounts" -}}
{{- $v := .root.Values.grpc -}}
{{- if and $v.tls.enabled .server }}
- name: grpc-tls
  mountPath: /etc/reward-mesh/grpc-tls
  readOnly: true
{{- end }}
{{- if and $v.tls.enabled .client }}
- name: grpc-ca
  mountPath: /etc/reward-mesh/grpc-ca
  readOnly: true
{{- if $v.tls.mtls.enabled }}
- name: grpc-client-tls
  mountPath: /etc/reward-mesh/grpc-client-tls
  readOnly: true
{{- end }}
{{- end }}
{{- if $v.token.enabled }}
- name: grpc-token
  mountPath: /etc/reward-mesh/grpc-token
  readOnly: true
{{- end }}
{{- end -}}

{{/* NATS CA of an external NATS (volume + mount) */}}
{{- define "rm.natsCaVolume" -}}
{{- if and (not .Values.nats.enabled) .Values.nats.external.caSecret }}
- name: nats-ca
  secret:
    secretName: {{ .Values.nats.external.caSecret }}
    defaultMode: 0440
    items: [{key: ca.crt, path: ca.crt}]
{{- end }}
{{- end -}}
{{- define "rm.natsCaMount" -}}
{{- if and (not .Values.nats.enabled) .Values.nats.external.caSecret }}
- name: nats-ca
  mountPath: /etc/reward-mesh/nats-ca
  readOnly: true
{{- end }}
{{- end -}}

{{/* ---- OpenTelemetry and common env ---- */}}

{{/* (dict "root" $ "service" "length") */}}
{{- define "rm.commonEnv" -}}
- name: HOME
  value: /tmp
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- with .root.Values.otel.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $.root.Values.otel.protocol | quote }}
- name: OTEL_TRACES_EXPORTER
  value: otlp
- name: OTEL_SERVICE_NAME
  value: {{ $.service | quote }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ $attrs := list "k8s.pod.name=$(POD_NAME)" "k8s.namespace.name=$(POD_NAMESPACE)" (printf "service.namespace=%s" $.root.Release.Name) -}}
  {{- range $k, $v := $.root.Values.otel.resourceAttributes -}}{{- $attrs = append $attrs (printf "%s=%v" $k $v) -}}{{- end -}}
  {{- join "," $attrs | quote }}
{{- end }}
{{- end -}}

{{/* Extra env from a `NAME: value` map */}}
{{- define "rm.extraEnv" -}}
{{- range $k, $v := . }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end -}}

{{/* /tmp emptyDir (volume) */}}
{{- define "rm.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ . }}
{{- end -}}

{{- define "rm.podDefaults" -}}
automountServiceAccountToken: false
serviceAccountName: {{ include "rm.serviceAccountName" . }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The server certificate's DNS names: every gRPC Service's names. */}}
{{- define "rm.grpcDnsNames" -}}
{{- $names := list -}}
{{- $full := include "rm.fullname" . -}}
{{- $hosts := list -}}
{{- range $name, $s := .Values.services }}{{ if $s.enabled }}{{ $hosts = append $hosts (printf "%s-%s" $full $name) }}{{ end }}{{ end -}}
{{- if .Values.learner.enabled }}{{ $hosts = append $hosts (printf "%s-learner" $full) }}{{ end -}}
{{- range $hosts -}}
{{- $names = concat $names (list . (printf "%s.%s" . $.Release.Namespace) (printf "%s.%s.svc" . $.Release.Namespace) (printf "%s.%s.svc.%s" . $.Release.Namespace $.Values.clusterDomain)) -}}
{{- end -}}
{{- toJson (concat $names .Values.grpc.tls.extraDnsNames) -}}
{{- end -}}

{{/* ---- NetworkPolicy pieces ---- */}}
{{/* DNS egress, shared by every policy. */}}
{{- define "rm.np.dns" -}}
- ports:
    {{- range .Values.networkPolicy.dnsPorts }}
    - {protocol: UDP, port: {{ . }}}
    - {protocol: TCP, port: {{ . }}}
    {{- end }}
{{- end -}}
{{- define "rm.np.toNats" -}}
{{- if .Values.nats.enabled }}
- to:
    - podSelector:
        matchLabels:
          {{- include "rm.selectorLabels" (dict "root" . "component" "nats") | nindent 10 }}
  ports:
    - {protocol: TCP, port: {{ .Values.nats.port }}}
{{- else }}
# An external NATS: its port anywhere (narrow it with networkPolicy.extraEgress + your own policy).
- ports:
    - {protocol: TCP, port: {{ .Values.nats.external.port }}}
{{- end }}
{{- end -}}

{{/* A service block with every optional key defaulted (a new service needs only enabled, port, healthPort,
domains). `dig` keeps a key that is set, false included. Returns JSON. */}}
{{- define "rm.service" -}}
{{- $s := . -}}
{{- $out := dict
  "enabled" $s.enabled "port" (int $s.port) "healthPort" (int $s.healthPort) "domains" $s.domains
  "httpPort" (int (dig "httpPort" 0 $s))
  "image" (dict "repository" (dig "image" "repository" "" $s) "tag" (dig "image" "tag" "" $s) "digest" (dig "image" "digest" "" $s))
  "envPrefix" (dig "envPrefix" "" $s)
  "args" (dig "args" list $s)
  "env" (dig "env" dict $s)
  "replicas" (int (dig "replicas" 1 $s))
  "resources" (dig "resources" dict $s)
  "autoscaling" (dict "enabled" (dig "autoscaling" "enabled" true $s) "maxReplicas" (int (dig "autoscaling" "maxReplicas" 4 $s)) "targetCPUUtilizationPercentage" (int (dig "autoscaling" "targetCPUUtilizationPercentage" 80 $s)))
  "keda" (dict "lagThreshold" (int (dig "keda" "lagThreshold" 100 $s)) "minReplicaCount" (int (dig "keda" "minReplicaCount" 1 $s)) "maxReplicaCount" (int (dig "keda" "maxReplicaCount" 8 $s)))
  "pdb" (dict "enabled" (dig "pdb" "enabled" true $s))
  "sandbox" (dict "enabled" (dig "sandbox" "enabled" false $s) "mode" (dig "sandbox" "mode" "bwrap" $s) "runtimeClassName" (dig "sandbox" "runtimeClassName" "gvisor" $s) "seccompLocalhostProfile" (dig "sandbox" "seccompLocalhostProfile" "" $s) "tmpSizeLimit" (dig "sandbox" "tmpSizeLimit" "1Gi" $s))
  "nodeSelector" (dig "nodeSelector" dict $s)
  "tolerations" (dig "tolerations" list $s)
  "affinity" (dig "affinity" dict $s)
  "podAnnotations" (dig "podAnnotations" dict $s)
-}}
{{- toJson $out -}}
{{- end -}}

{{/*
Egress to the OpenTelemetry collector when `otel.endpoint` is set: its port (from the URL; the scheme's
default otherwise) to `otel.networkPolicyPeers`, or to any destination when that list is empty.
*/}}
{{- define "rm.np.toOtel" -}}
{{- with .Values.otel.endpoint }}
{{- $u := urlParse . }}
{{- $hostPort := splitList ":" $u.host }}
{{- $port := ternary (last $hostPort) (ternary "443" "80" (eq $u.scheme "https")) (gt (len $hostPort) 1) }}
- ports:
    - {protocol: TCP, port: {{ $port }}}
  {{- with $.Values.otel.networkPolicyPeers }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/*
Telemetry env of a service or trainer container when `telemetry.enabled`: the one switch, the /metrics
port on every interface, and no traces unless `otel.endpoint` says where (not OTLP to localhost).
*/}}
{{- define "rm.telemetryEnv" -}}
{{- if .Values.telemetry.enabled }}
- name: REWARD_MESH_TELEMETRY
  value: "on"
- name: OTEL_EXPORTER_PROMETHEUS_HOST
  value: 0.0.0.0
- name: OTEL_EXPORTER_PROMETHEUS_PORT
  value: {{ .Values.telemetry.metricsPort | quote }}
{{- if not .Values.otel.endpoint }}
- name: OTEL_TRACES_EXPORTER
  value: none
{{- end }}
{{- end }}
{{- end -}}

{{/* Prometheus scrape annotations of a pod when telemetry is on */}}
{{- define "rm.scrapeAnnotations" -}}
{{- if and .Values.telemetry.enabled .Values.telemetry.scrapeAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.telemetry.metricsPort | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{/* NetworkPolicy ingress to the /metrics port when telemetry is on (from `telemetry.networkPolicyPeers`, or any source) */}}
{{- define "rm.np.metricsIngress" -}}
{{- if .Values.telemetry.enabled }}
- ports:
    - {protocol: TCP, port: {{ .Values.telemetry.metricsPort }}}
  {{- with .Values.telemetry.networkPolicyPeers }}
  from:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* The manifest's `domainsEnv` of a known service (templates/_manifests.tpl), or "". */}}
{{- define "rm.domainsEnv" -}}
{{- $m := get (include "rm.manifests" . | fromJson) . -}}
{{- if $m }}{{ get $m "domainsEnv" | default "" }}{{ end -}}
{{- end -}}

{{/*
Fails unless `services.<name>.domains` are what the service consumes: the chart derives its NATS user's
permissions (consumers `<name>--<domain>`) and KEDA triggers from them, so a difference is a service that
cannot create its consumers, or triggers on consumers that do not exist. A known service (in
templates/_manifests.tpl) consumes its manifest's domains; one with a `domainsEnv` variable consumes that
variable's list, which the chart sets from `domains` (an explicit `env` entry must then equal them). A
service the chart does not know (a block of your own, your image) is taken at its word.
(dict "root" $ "name" <name> "service" <rm.service>)
*/}}
{{- define "rm.checkDomains" -}}
{{- $name := .name -}}
{{- $s := .service -}}
{{- $m := get (include "rm.manifests" .root | fromJson) $name -}}
{{- $have := $s.domains | uniq | sortAlpha -}}
{{- if $m }}
{{- $key := get $m "domainsEnv" | default "" -}}
{{- if $key }}
{{- if hasKey $s.env $key }}
{{- $env := list -}}
{{- range splitList "," (toString (get $s.env $key)) }}{{ $d := trim . }}{{ if $d }}{{ $env = append $env $d }}{{ end }}{{ end -}}
{{- if ne (join "," ($env | uniq | sortAlpha)) (join "," $have) }}
{{- fail (printf "services.%s.env.%s (%s) and services.%s.domains (%s) differ: the service consumes the first, its NATS permissions and KEDA triggers follow the second. Set only services.%s.domains (the chart passes it as %s)" $name $key (toString (get $s.env $key)) $name (join ", " $s.domains) $name $key) }}
{{- end }}
{{- end }}
{{- else if ne (join "," $have) (join "," ($m.domains | uniq | sortAlpha)) }}
{{- fail (printf "services.%s.domains (%s) differ from what %s consumes (%s, its manifest's domains; it has no variable that changes them): its NATS permissions and KEDA triggers would not match its consumers. Leave services.%s.domains at the default [%s]" $name (join ", " $s.domains) $name (join ", " $m.domains) $name (join ", " $m.domains)) }}
{{- end }}
{{- end }}
{{- end -}}
