#!/usr/bin/env bash
# Check that the Dockerfile's runtime stage provides every shared library a pushworker binary
# needs, without running Docker (docs/operations.md).
#
#   scripts/check_image_libs.sh BINARY [DOCKERFILE]
#
# 1. Parse the `apt-get install` packages of the Dockerfile's LAST stage (the runtime image).
# 2. Work out what those packages bring into the image: their Depends/Pre-Depends closure
#    (from this Debian bookworm machine's dpkg database, apt-cache for packages not installed
#    here) plus the base image's own packages, taken as the Priority: required set that
#    debian:bookworm-slim is built from, with their closure.
# 3. For every library `ldd BINARY` lists: resolve its path, find the package owning it with
#    `dpkg -S`, and check that package is in the image. The Swift runtime (libswift*,
#    libFoundation*, lib_Foundation*, libdispatch, libBlocksRuntime, libicu*) counts as
#    covered: the release image links it statically (--static-swift-stdlib), so a debug
#    build's dynamic Swift libraries are expected here.
# 4. The runtime stage installs tzdata itself: recipients' IANA time zones are read from
#    /usr/share/zoneinfo (docs/local-time.md), which no library pulls in and slim base images
#    may lack.
#
# Prints how each library is covered; exits 1 listing the missing ones, 2 on usage errors.
set -euo pipefail

usage() { echo "usage: $0 BINARY [DOCKERFILE]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
binary=$1
dockerfile=${2:-"$(cd "$(dirname "$0")/.." && pwd)/Dockerfile"}
[[ -f $binary ]] || { echo "check_image_libs: no such binary: $binary" >&2; exit 2; }
[[ -f $dockerfile ]] || { echo "check_image_libs: no such Dockerfile: $dockerfile" >&2; exit 2; }
for tool in ldd dpkg dpkg-query awk; do
    command -v "$tool" >/dev/null || { echo "check_image_libs: $tool is required" >&2; exit 2; }
done

# --- 1. packages installed by the runtime stage ---------------------------------------------
# Join continuation lines, keep the last stage, take the words after `apt-get install` up
# to the end of that shell command (&&, ;, |).
runtime_packages=$(
    sed -e ':a' -e '/\\$/{N;s/\\\n/ /;ba' -e '}' "$dockerfile" |
    awk 'toupper($1) == "FROM" { stage = "" } { stage = stage $0 "\n" } END { printf "%s", stage }' |
    awk '{
        for (i = 1; i <= NF; i++) {
            if ($i == "apt-get" && $(i + 1) == "install") {
                for (j = i + 2; j <= NF; j++) {
                    if ($j == "&&" || $j == ";" || $j == "|" || $j ~ /;$/) break
                    if ($j !~ /^-/) print $j
                }
            }
        }
    }' | sed -e 's/[=:/].*//' | sort -u
)
if [[ -z $runtime_packages ]]; then
    echo "check_image_libs: no apt-get install in the last stage of $dockerfile" >&2
    exit 1
fi
echo "runtime stage installs: $(tr '\n' ' ' <<<"$runtime_packages")"

# --- 2. closure of what the image contains ---------------------------------------------------
depends_of() {  # prints the direct Depends + Pre-Depends of package $1, one a line
    local deps
    if deps=$(dpkg-query -W -f='${Depends}, ${Pre-Depends}' "$1" 2>/dev/null); then :
    elif command -v apt-cache >/dev/null; then
        deps=$(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
                 --no-replaces --no-enhances "$1" 2>/dev/null |
               awk '/^ *(Pre)?Depends:/ { print $2 }' | tr '\n' ',')
    else
        deps=""
    fi
    # "a (>= 1), b | c, d:any" → first alternative installed here (else the first one)
    echo "$deps" | tr ',' '\n' | while IFS= read -r group; do
        [[ -n ${group// } ]] || continue
        chosen=""
        IFS='|' read -ra alternatives <<<"$group"
        for alt in "${alternatives[@]}"; do
            name=$(echo "$alt" | sed -e 's/(.*)//' -e 's/:.*//' -e 's/<\(.*\)>/\1/' | tr -d ' ')
            [[ -n $name ]] || continue
            if [[ -z $chosen ]]; then chosen=$name; fi
            if dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q "install ok installed"; then
                chosen=$name; break
            fi
        done
        if [[ -n $chosen ]]; then echo "$chosen"; fi
    done
    return 0
}

declare -A in_image=()   # package → how it gets there
closure() {  # closure <reason> <package>...
    local reason=$1; shift
    local queue=("$@") pkg dep
    while [[ ${#queue[@]} -gt 0 ]]; do
        pkg=${queue[0]}; queue=("${queue[@]:1}")
        if [[ -n ${in_image[$pkg]:-} ]]; then continue; fi
        in_image[$pkg]=$reason
        while IFS= read -r dep; do
            if [[ -n $dep && -z ${in_image[$dep]:-} ]]; then queue+=("$dep"); fi
        done < <(depends_of "$pkg")
    done
    return 0
}
for pkg in $runtime_packages; do
    closure "installed by the runtime stage (via $pkg)" "$pkg"
    in_image[$pkg]="installed by the runtime stage"
done
base_packages=$(dpkg-query -W -f='${Package} ${Priority} ${Essential}\n' 2>/dev/null |
                awk '$2 == "required" || $3 == "yes" { print $1 }')
# shellcheck disable=SC2086
closure "in the bookworm-slim base (Priority: required/Essential)" $base_packages

# --- 3. every library ldd lists ----------------------------------------------------------------
owner_of() {  # package owning file $1 (tries the usrmerge aliases of the path), or nothing
    local path=$1 real candidates c out
    real=$(readlink -f "$path" 2>/dev/null || echo "$path")
    candidates=("$path" "$real")
    for c in "$path" "$real"; do
        case $c in
            /usr/*) candidates+=("${c#/usr}") ;;
            *) candidates+=("/usr$c") ;;
        esac
    done
    for c in "${candidates[@]}"; do
        if out=$(dpkg -S "$c" 2>/dev/null); then
            echo "$out" | head -n1 | sed -e 's/:.*//' -e 's/,.*//'
            return 0
        fi
    done
    return 1
}

missing=()
covered=0
ldd_out=$(ldd "$binary" 2>&1) || { echo "check_image_libs: ldd failed: $ldd_out" >&2; exit 2; }
while IFS= read -r line; do
    line=${line#"${line%%[![:space:]]*}"}
    [[ -n $line ]] || continue
    case $line in
        linux-vdso.so*|linux-gate.so*|statically\ linked*) continue ;;
    esac
    if [[ $line == *"=>"* ]]; then
        lib=${line%% =>*}
        path=$(echo "${line#*=> }" | awk '{ print $1 }')
    else
        path=$(echo "$line" | awk '{ print $1 }')
        lib=$(basename "$path")
    fi
    case $lib in
        libswift*|libFoundation*|lib_Foundation*|libdispatch*|libBlocksRuntime*|libicu*|libXCTest*|libTesting*)
            printf '  %-28s static Swift runtime (--static-swift-stdlib)\n' "$lib"
            covered=$((covered + 1)); continue ;;
    esac
    if [[ $path == "not" || ! -e $path ]]; then
        missing+=("$lib (not found on this machine)")
        continue
    fi
    if ! pkg=$(owner_of "$path"); then
        missing+=("$lib ($path belongs to no Debian package)")
        continue
    fi
    if [[ -n ${in_image[$pkg]:-} ]]; then
        printf '  %-28s %-22s %s\n' "$lib" "$pkg" "${in_image[$pkg]}"
        covered=$((covered + 1))
    else
        missing+=("$lib (package $pkg)")
    fi
done <<<"$ldd_out"

# --- 4. data files no library brings ----------------------------------------------------------
if ! grep -qx tzdata <<<"$runtime_packages"; then
    missing+=("tzdata (/usr/share/zoneinfo: the recipients' time zones, docs/local-time.md)")
else
    printf '  %-28s %-22s %s\n' "/usr/share/zoneinfo" "tzdata" "${in_image[tzdata]}"
    covered=$((covered + 1))
fi

if [[ ${#missing[@]} -gt 0 ]]; then
    echo "missing from the runtime image:"
    printf '  %s\n' "${missing[@]}"
    echo "$covered passed, ${#missing[@]} failed"
    exit 1
fi
echo "$covered passed, 0 failed"
