# Sourced by the CI scripts: `apt_install PKG...` installs Debian packages as root, or
# through sudo when not root (fails when neither). Needs `say` and `fail` defined.
apt_install() {
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || fail "need $* and neither root nor sudo"
    sudo=sudo
  fi
  say "installing $*"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}
