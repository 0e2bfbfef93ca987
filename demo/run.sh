#!/usr/bin/env bash
# Starts the demo: three key-value peers on localhost and the launcher's command prompt.
#   demo/run.sh            build the jar if it is missing, then start
#   demo/run.sh --build    rebuild first
#   demo/run.sh --help     the launcher's and the peer's flags
# Any other arguments go to the launcher, e.g. demo/run.sh --peers 5 --replicas 1
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
jar="$here/target/ringmaster-demo.jar"

build=false
args=()
for a in "$@"; do
  if [[ "$a" == "--build" ]]; then build=true; else args+=("$a"); fi
done

if $build || [[ ! -f "$jar" ]]; then
  echo "building $jar ..."
  (cd "$root" && mvn -B -q -DskipTests -pl demo -am package)
fi

if [[ " ${args[*]-} " == *" --help "* || " ${args[*]-} " == *" -h "* ]]; then
  sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
  exec java -jar "$jar" help
fi

# Three peers unless the arguments say otherwise.
if [[ " ${args[*]-} " != *" --peers "* ]]; then
  args=(--peers 3 "${args[@]+"${args[@]}"}")
fi
exec java -Djava.net.preferIPv4Stack=true -jar "$jar" cluster "${args[@]}"
