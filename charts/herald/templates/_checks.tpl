{{/* Checks of the values that would otherwise crash-loop the pods on
install (or be refused by the hot reload while Helm reports success),
made while rendering so that `helm install/upgrade` fails before anything
is deployed, with the values path in the message. They cover what the
chart can see: built-in detector names, the sinks rules, defaultSinks and
routes name, and durations. Everything else herald checks (CEL
conditions, templates, selectors) is the config-check hook's job
(templates/config-check.yaml). The detector table must match herald's:
internal/chart's TestChecksKnowEveryDetector holds it. */}}
{{- define "herald.checks" -}}
{{- $detectors := dict
  "Pod" (list "container-error" "crashloop" "evicted" "image-pull" "not-ready" "oomkilled" "pending" "pod-failed" "restarts")
  "Deployment" (list "rollout-stuck" "unavailable")
  "StatefulSet" (list "unavailable")
  "DaemonSet" (list "unavailable")
  "Job" (list "cronjob-failed" "job-failed" "long-running")
  "CronJob" (list "missed-schedule")
  "Node" (list "node-not-ready" "node-pressure")
  "PersistentVolumeClaim" (list "pvc-pending" "volume-filling")
  "HorizontalPodAutoscaler" (list "max-replicas")
  "Service" (list "no-endpoints")
  "Event" (list "warning-events") -}}
{{- $builtinKinds := list "CronJob" "DaemonSet" "Deployment" "EndpointSlice" "Event" "HorizontalPodAutoscaler" "Job" "Namespace" "Node" "PersistentVolumeClaim" "Pod" "ReplicaSet" "Secret" "Service" "StatefulSet" -}}
{{- $duration := "^(0|([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$" -}}
{{- $vs := .Values.volumeStats | default dict -}}
{{- if and $vs.enabled (lt (int ($vs.critical | default 90)) (int ($vs.threshold | default 80))) -}}
{{- fail (printf "volumeStats.critical (%v) is below volumeStats.threshold (%v): the critical alert must need at least as full a volume; raise volumeStats.critical" ($vs.critical | default 90) ($vs.threshold | default 80)) -}}
{{- end -}}
{{- $cfg := .Values.config | default dict -}}
{{- $sinks := list -}}
{{- range ($cfg.sinks | default list) }}{{ $sinks = append $sinks (toString .name) }}{{ end -}}
{{- $have := join ", " $sinks | default "none" -}}
{{- $defaultSinks := .Values.defaultSinks | default list -}}
{{- $groups := list (list "config.rules" ($cfg.rules | default list)) (list "extraRules" (.Values.extraRules | default list)) -}}
{{- range $group := $groups -}}
{{- $where := index $group 0 -}}
{{- range $i, $r := index $group 1 -}}
{{- $path := printf "%s[%d]" $where $i -}}
{{- if not (kindIs "map" $r) -}}
{{- fail (printf "%s: a rule is a map (name, kind, detector or condition, ...), not %v" $path $r) -}}
{{- end -}}
{{- if and $r.kind (not $r.apiVersion) (not (has (toString $r.kind) $builtinKinds)) -}}
{{- fail (printf "%s.apiVersion: kind %s is not built in: set apiVersion (group/version), e.g. cert-manager.io/v1 for Certificate" $path (toString $r.kind)) -}}
{{- end -}}
{{- if and $r.detector (hasKey $detectors (toString $r.kind)) (not $r.apiVersion) -}}
{{- $known := get $detectors (toString $r.kind) -}}
{{- if not (has (toString $r.detector) $known) -}}
{{- fail (printf "%s.detector: unknown detector %q for kind %s; available: %s" $path (toString $r.detector) (toString $r.kind) (join ", " $known)) -}}
{{- end -}}
{{- end -}}
{{- if not $r.sinks -}}
{{- range $j, $s := $defaultSinks -}}
{{- if not (has (toString $s) $sinks) -}}
{{- fail (printf "defaultSinks[%d]: no sink named %q in config.sinks (there: %s); %s names no sinks, so it gets defaultSinks" $j (toString $s) $have $path) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $j, $s := ($r.sinks | default list) -}}
{{- if not (has (toString $s) $sinks) -}}
{{- fail (printf "%s.sinks[%d]: no sink named %q in config.sinks (there: %s)" $path $j (toString $s) $have) -}}
{{- end -}}
{{- end -}}
{{- range $field := list "for" "window" "settle" "updateInterval" -}}
{{- $v := get $r $field -}}
{{- if and $v (not (regexMatch $duration (toString $v))) -}}
{{- fail (printf "%s.%s: %q is not a duration (e.g. 90s, 15m, 1h30m)" $path $field (toString $v)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $routes := .Values.routes | default ($cfg.routes | default list) -}}
{{- $routesAt := ternary "routes" "config.routes" (not (empty .Values.routes)) -}}
{{- range $i, $route := $routes -}}
{{- range $j, $to := ($route.to | default list) -}}
{{- if and $to.sink (not (has (toString $to.sink) $sinks)) -}}
{{- fail (printf "%s[%d].to[%d].sink: no sink named %q in config.sinks (there: %s)" $routesAt $i $j (toString $to.sink) $have) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $inc := $cfg.incidents | default dict -}}
{{- range $field := list "updateInterval" "resolveHoldDown" -}}
{{- $v := get $inc $field -}}
{{- if and $v (not (regexMatch $duration (toString $v))) -}}
{{- fail (printf "config.incidents.%s: %q is not a duration (e.g. 30s, 5m)" $field (toString $v)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
