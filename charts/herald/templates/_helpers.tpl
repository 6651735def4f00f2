{{- define "herald.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "herald.labels" -}}
app.kubernetes.io/name: herald
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "herald.selectorLabels" -}}
app.kubernetes.io/name: herald
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "herald.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "herald.fullname" .) .Values.serviceAccount.name }}{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}

{{/* The API group and resource of a rule's kind: built-in kinds from a
table, custom resources from apiVersion and <lower-case kind>s. */}}
{{- define "herald.resource" -}}
{{- $builtin := dict "Pod" "|pods" "Node" "|nodes" "Namespace" "|namespaces" "PersistentVolumeClaim" "|persistentvolumeclaims" "Deployment" "apps|deployments" "StatefulSet" "apps|statefulsets" "DaemonSet" "apps|daemonsets" "ReplicaSet" "apps|replicasets" "Job" "batch|jobs" "CronJob" "batch|cronjobs" "HorizontalPodAutoscaler" "autoscaling|horizontalpodautoscalers" "Service" "|services" "EndpointSlice" "discovery.k8s.io|endpointslices" "Event" "events.k8s.io|events" "Secret" "|secrets" "ConfigMap" "|configmaps" -}}
{{- if hasKey $builtin .kind -}}{{ get $builtin .kind }}{{- else -}}{{ (splitList "/" (.apiVersion | default "v1")) | first }}|{{ lower .kind }}s{{- end -}}
{{- end -}}

{{/* The image: by digest when image.digest is set (repository@sha256:…),
else by tag. */}}
{{- define "herald.image" -}}
{{- with .Values.image.digest -}}
{{- if not (regexMatch "^sha256:[a-f0-9]{64}$" .) -}}
{{- fail (printf "image.digest %q: want sha256: and 64 hex digits" .) -}}
{{- end -}}
{{ $.Values.image.repository }}@{{ . }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* Egress peers: the CIDRs given, or any address but link-local
(anywhere). A CIDR of every address still leaves out link-local. */}}
{{- define "herald.egressPeers" -}}
{{- if .cidrs -}}
{{- range .cidrs }}
- ipBlock:
    cidr: {{ . | quote }}
    {{- if eq . "0.0.0.0/0" }}
    except: ["169.254.0.0/16"]
    {{- else if eq . "::/0" }}
    except: ["fe80::/10", "fd00:ec2::254/128"]
    {{- end }}
{{- end }}
{{- else -}}
{{ toYaml .anywhere }}
{{- end -}}
{{- end -}}

{{/* herald's configuration as the ConfigMap ships it: `config` with the
top-level values folded in. clusterName fills config.clusterName unless
config names one; extraRules are appended to config.rules (Helm replaces
lists whole, so adding to them in values would mean copying the
defaults); a rule that names no sinks gets defaultSinks; routes become
config.routes (one or the other: the order of routes decides); a Slack
bot-token sink without a channel gets slack.channel; with
slack.interactive.enabled, the sink it names gets buttons (interactive:
the mounted app-level token and the allow list). */}}
{{- define "herald.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) -}}
{{- if and .Values.clusterName (not $cfg.clusterName) -}}
{{- $_ := set $cfg "clusterName" .Values.clusterName -}}
{{- end -}}
{{- /* disabledRules drops rules of config.rules by name, so that one
default can be turned off without copying the others. */ -}}
{{- $disabled := .Values.disabledRules | default list -}}
{{- $kept := list -}}
{{- $known := dict -}}
{{- range ($cfg.rules | default list) -}}
{{- $_ := set $known (toString .name) true -}}
{{- if not (has (toString .name) $disabled) -}}{{- $kept = append $kept . -}}{{- end -}}
{{- end -}}
{{- range $disabled -}}
{{- if not (hasKey $known (toString .)) -}}
{{- fail (printf "disabledRules names %s, which is not a rule of config.rules (%s)" (toString .) (keys $known | sortAlpha | join ", ")) -}}
{{- end -}}
{{- end -}}
{{- $rules := concat $kept (deepCopy (.Values.extraRules | default list)) -}}
{{- /* volumeStats.enabled adds volume-filling (volumeStats.rule merged
into it) and says how often to read the kubelets (what config.volumeStats
does not set itself); the grant it needs is in rbac.yaml. */ -}}
{{- $vs := .Values.volumeStats | default dict -}}
{{- if $vs.enabled -}}
{{- $rule := dict "name" "volume-filling" "kind" "PersistentVolumeClaim" "detector" "volume-filling" "threshold" ($vs.threshold | default 80) "critical" ($vs.critical | default 90) "horizon" (toString ($vs.horizon | default "24h")) -}}
{{- $rules = append $rules (merge (deepCopy ($vs.rule | default dict)) $rule) -}}
{{- $poll := deepCopy ($cfg.volumeStats | default dict) -}}
{{- range $key := list "interval" "concurrency" "timeout" -}}
{{- if and (hasKey $vs $key) (not (hasKey $poll $key)) -}}
{{- $_ := set $poll $key (index $vs $key) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $cfg "volumeStats" $poll -}}
{{- end -}}
{{- $names := dict -}}
{{- range $rules -}}
{{- if hasKey $names (toString .name) -}}
{{- fail (printf "rule %s is defined twice: an entry of extraRules has the name of a rule in config.rules (or of another in extraRules); rename it" .name) -}}
{{- end -}}
{{- $_ := set $names (toString .name) true -}}
{{- if and (not .sinks) $.Values.defaultSinks -}}
{{- $_ := set . "sinks" $.Values.defaultSinks -}}
{{- end -}}
{{- end -}}
{{- $_ := set $cfg "rules" $rules -}}
{{- if .Values.routes -}}
{{- if $cfg.routes -}}
{{- fail "routes and config.routes are both set: routes are tried in order, so give them in one place" -}}
{{- end -}}
{{- $_ := set $cfg "routes" .Values.routes -}}
{{- end -}}
{{- $channel := (.Values.slack | default dict).channel -}}
{{- range $cfg.sinks -}}
{{- if and $channel .slack .slack.token (not .slack.channel) -}}
{{- $_ := set .slack "channel" $channel -}}
{{- end -}}
{{- end -}}
{{- $inter := (.Values.slack | default dict).interactive | default dict -}}
{{- if $inter.enabled -}}
{{- $found := false -}}
{{- range $cfg.sinks -}}
{{- if eq (toString .name) (toString $inter.sink) -}}
{{- $found = true -}}
{{- if not (and .slack .slack.token) -}}
{{- fail (printf "slack.interactive.sink=%s: that sink is not a Slack sink with a bot token (token:), which buttons need to edit the message a press acts on" (toString $inter.sink)) -}}
{{- end -}}
{{- if .slack.interactive -}}
{{- fail (printf "slack.interactive.enabled and config.sinks[%s].slack.interactive are both set: give the buttons in one place" (toString .name)) -}}
{{- end -}}
{{- $in := dict "appToken" (dict "file" (printf "%s/app-token" (include "herald.appTokenDir" $))) -}}
{{- with $inter.allow -}}
{{- $_ := set $in "allow" (deepCopy .) -}}
{{- end -}}
{{- $_ := set .slack "interactive" $in -}}
{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- fail (printf "slack.interactive.sink=%s: no sink of that name in config.sinks" (toString $inter.sink)) -}}
{{- end -}}
{{- end -}}
{{- $intake := (.Values.intake | default dict).alertmanager | default dict -}}
{{- if $intake.enabled -}}
{{- if (($cfg.intake | default dict).alertmanager) -}}
{{- fail "intake.alertmanager.enabled and config.intake.alertmanager are both set: give the receiver in one place (intake.alertmanager.settings for its other settings)" -}}
{{- end -}}
{{- $am := deepCopy ($intake.settings | default dict) -}}
{{- $_ := set $am "listen" (printf ":%v" $intake.port) -}}
{{- if not $intake.existingSecret -}}
{{- fail "intake.alertmanager.enabled: intake.alertmanager.existingSecret must name the Secret holding the bearer token Alertmanager sends" -}}
{{- end -}}
{{- $_ := set $am "token" (dict "file" (printf "%s/token" (include "herald.intakeTokenDir" $))) -}}
{{- $tls := $intake.tls | default dict -}}
{{- if and $tls.clientCASecret (not $tls.existingSecret) -}}
{{- fail "intake.alertmanager.tls.clientCASecret needs intake.alertmanager.tls.existingSecret: client certificates are checked over HTTPS" -}}
{{- end -}}
{{- if and $tls.clientCASecret $tls.clientCA -}}
{{- fail "intake.alertmanager.tls: clientCA and clientCASecret are both set: give the client CA in one place (clientCASecret, a CA that signs only Alertmanager's certificate, is the safer)" -}}
{{- end -}}
{{- if $tls.existingSecret -}}
{{- $t := dict "certFile" (printf "%s/tls.crt" (include "herald.intakeTLSDir" $)) "keyFile" (printf "%s/tls.key" (include "herald.intakeTLSDir" $)) -}}
{{- if $tls.clientCA -}}
{{- $_ := set $t "clientCAFile" (printf "%s/ca.crt" (include "herald.intakeTLSDir" $)) -}}
{{- end -}}
{{- if $tls.clientCASecret -}}
{{- $_ := set $t "clientCAFile" (printf "%s/ca.crt" (include "herald.intakeClientCADir" $)) -}}
{{- end -}}
{{- $_ := set $am "tls" $t -}}
{{- end -}}
{{- $_ := set $cfg "intake" (dict "alertmanager" $am) -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* Where the intake's bearer token (intake.alertmanager) is mounted. */}}
{{- define "herald.intakeTokenDir" -}}/var/run/secrets/herald/intake{{- end -}}

{{/* Where the intake's certificate (intake.alertmanager.tls) is mounted. */}}
{{- define "herald.intakeTLSDir" -}}/var/run/secrets/herald/intake-tls{{- end -}}

{{/* Where the CA of Alertmanager's client certificate
(intake.alertmanager.tls.clientCASecret) is mounted. */}}
{{- define "herald.intakeClientCADir" -}}/var/run/secrets/herald/intake-client-ca{{- end -}}

{{/* Where the Slack app-level token (slack.interactive) is mounted. */}}
{{- define "herald.appTokenDir" -}}/var/run/secrets/herald/slack-interactive{{- end -}}

{{/* Whether herald's configuration has Slack buttons (any sink's
slack.interactive, from slack.interactive.enabled or written in
config.sinks): "true" or "". */}}
{{- define "herald.interactive" -}}
{{- range (include "herald.config" . | fromYaml).sinks -}}
{{- if and .slack .slack.interactive -}}true{{- end -}}
{{- end -}}
{{- end -}}
