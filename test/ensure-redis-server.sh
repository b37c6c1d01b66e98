#!/bin/sh
# `npm test` runs this first: the shared-state tests start their own redis-server and never skip
# without it. Installs Debian's package when it can (apt-install.sh); otherwise names the command.
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/apt-install.sh"
apt_install redis-server redis-server 'the shared-state tests start their own'
case $? in 0) exit 0 ;; 1) exit 1 ;; esac

echo 'npm test needs redis-server (the shared-state tests start their own). Install it with:' >&2
if [ "$(uname -s)" = Darwin ]; then
  echo '  brew install redis' >&2
elif command -v dnf >/dev/null 2>&1; then
  echo '  sudo dnf install redis' >&2
else
  echo "  your system's redis package (it provides redis-server)" >&2
fi
exit 1
