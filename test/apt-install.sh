# Sourced by the test set-up scripts (ensure-*.sh): installs one Debian package for the tests when
# that needs no question (root or passwordless sudo, apt-get present, non-interactive), so no test
# ever skips for a missing program.
# apt_install <command> <package> <why>: returns 0 once <command> is on the PATH; 1 after printing
# the command to run when apt-get could not or may not install it; 2 when there is no apt-get.
apt_install() {
  command -v "$1" >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 || return 2
  if [ "$(id -u)" -eq 0 ]; then
    sudo=''
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo='sudo -n'
  else
    echo "npm test needs $1 ($3). Install it with:" >&2
    echo "  sudo apt-get install $2" >&2
    return 1
  fi
  echo "$1 is missing: installing the $2 package (apt-get)" >&2
  $sudo apt-get update -q &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$2" &&
    command -v "$1" >/dev/null 2>&1 && return 0
  echo "Installing $2 failed (output above). Install it with:" >&2
  echo "  sudo apt-get install $2" >&2
  return 1
}
