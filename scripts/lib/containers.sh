# Shared by scripts/image-test and scripts/fresh-machine-test (sourced, not run): a container engine
# and a debian:bookworm-slim base image, made here when no registry can be reached.
#
# engine: Docker when its daemon answers, else Podman (installed with apt-get when running as root).
# Podman's default runtime (crun) cannot start containers on hosts with hybrid cgroups, and setting
# container rlimits is refused in some sandboxes: runc and no default ulimits work everywhere we
# tried (/etc/containers/containers.conf, written only when absent).
# base: `debian:bookworm-slim` as present, else pulled, else made from Debian's own packages with
# debootstrap (minbase, the mirror this machine's apt uses) and `podman import`.

ENGINE=""

LOCK=/tmp/deblo-containers.lock  # image-test and fresh-machine-test may prepare at the same time

container_engine() {
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    ENGINE=docker
    return 0
  fi
  ( flock 9 && _podman ) 9>"$LOCK" || return 1
  ENGINE=podman
}

_podman() {
  # runc too: the configuration below names it, and a machine may come with podman and crun only.
  if ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "installing podman (apt-get)" >&2
      local attempt
      for attempt in 1 2 3 4 5 6; do  # retried: scripts/test may be installing at the same time
        apt-get update -qq -o DPkg::Lock::Timeout=120 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
          --no-install-recommends -o DPkg::Lock::Timeout=600 podman runc debootstrap uidmap fuse-overlayfs \
          slirp4netns >/dev/null && break
        [ "$attempt" = 6 ] && return 1
        sleep 20
      done
    else
      echo "no container engine: install podman (apt-get install podman runc debootstrap) or docker" >&2
      return 1
    fi
  fi
  if [ "$(id -u)" = 0 ] && [ ! -f /etc/containers/containers.conf ]; then
    mkdir -p /etc/containers
    printf '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n' >/etc/containers/containers.conf
  fi
}

debian_mirror() {
  local uri
  uri=$(grep -h -m1 -E '^URIs: ' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | head -n1)
  [ -n "$uri" ] || uri=$(grep -h -m1 -E '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}')
  echo "${uri:-http://deb.debian.org/debian}"
}

base_image() {
  ( flock 9 && _base_image ) 9>"$LOCK"
}

_base_image() {
  local image=debian:bookworm-slim
  "$ENGINE" image inspect "$image" >/dev/null 2>&1 && return 0
  "$ENGINE" pull -q "docker.io/library/$image" >/dev/null 2>&1 && return 0
  command -v debootstrap >/dev/null 2>&1 || {
    [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
      debootstrap >/dev/null
  } || { echo "no $image and no debootstrap to make it" >&2; return 1; }
  local root
  root=$(mktemp -d)
  echo "making $image with debootstrap from $(debian_mirror)" >&2
  debootstrap --variant=minbase bookworm "$root" "$(debian_mirror)" >/dev/null || { rm -rf "$root"; return 1; }
  # The host's apt sources (same mirror) so that apt-get inside finds security updates too.
  if cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/" 2>/dev/null; then
    rm -f "$root/etc/apt/sources.list"  # the same mirror, listed once
  fi
  rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
  tar -C "$root" -c . | "$ENGINE" import - "$image" >/dev/null
  local rc=$?
  rm -rf "$root"
  return $rc
}
