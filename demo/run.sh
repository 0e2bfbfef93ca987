#!/usr/bin/env bash
# Starts the demo: three key-value peers on localhost and the launcher's command prompt.
#   demo/run.sh            build the jar if it is missing, then start
#   demo/run.sh --build    rebuild first
#   demo/run.sh --help     the launcher's and the peer's flags (with --build: build first)
# Any other arguments go to the launcher, e.g. demo/run.sh --peers 5 --replicas 1
set -euo pipefail
here="$(cd -- "$(dirname -- "$0")" >/dev/null && pwd)"
root="$(dirname -- "$here")"
jar="$here/target/ringmaster-demo.jar"

build=false
help=false
args=()
for a in "$@"; do
  case "$a" in
    --build) build=true ;;
    --help|-h) help=true ;;
    *) args+=("$a") ;;
  esac
done

command -v java >/dev/null || { echo "demo/run.sh: no java on the PATH (JDK 17 or later needed)" >&2; exit 1; }
# "17.0.15", "21", "25-ea" or "1.8.0_392": the major version is the first number, or the second
# after "1."; a version this cannot read is left to java itself
version=$(java -version 2>&1 | sed -n '1s/.*version "\([^"]*\)".*/\1/p' || true)
major=${version%%[!0-9]*}
if [[ "$major" == 1 ]]; then
  major=$(echo "$version" | cut -d. -f2)
fi
if [[ "$major" =~ ^[0-9]+$ ]] && (( major < 17 )); then
  echo "demo/run.sh: the java on the PATH is version $version; JDK 17 or later is needed" >&2
  exit 1
fi
if $build || { ! $help && [[ ! -f "$jar" ]]; }; then
  command -v mvn >/dev/null || { echo "demo/run.sh: no mvn on the PATH to build $jar (Maven 3.8 or later)" >&2; exit 1; }
  echo "building $jar (the first build downloads Maven's dependencies: a few minutes) ..."
  (cd -- "$root" && mvn -B -q -DskipTests -pl demo -am package)
elif [[ -f "$jar" ]] && [[ -n "$(find "$root/core/src/main" "$root/demo/src/main" "$root/config/jgroups" "$root/pom.xml" \
    "$root/core/pom.xml" "$root/demo/pom.xml" -type f -newer "$jar" -print -quit 2>/dev/null)" ]]; then
  echo "demo/run.sh: the sources changed since $jar was built; run ./demo/run.sh --build to use them" >&2
fi

if $help; then
  sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
  if [[ -f "$jar" ]]; then
    exec java -jar "$jar" help
  fi
  echo "(demo/run.sh --build --help builds the demo first, then lists the launcher's and the peer's flags)"
  exit 0
fi

# Three peers unless the arguments say otherwise.
if [[ " ${args[*]-} " != *" --peers "* ]]; then
  args=(--peers 3 "${args[@]+"${args[@]}"}")
fi
exec java -Djava.net.preferIPv4Stack=true -jar "$jar" cluster "${args[@]}"
