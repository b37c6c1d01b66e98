#!/bin/sh
# `npm test` runs this first: the storage.fsync tests run the gateway under strace (the order of its
# system calls proves when it syncs) and never skip without it. Installs Debian's package when it
# can (apt-install.sh); otherwise names the command.
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/apt-install.sh"
apt_install strace strace 'the storage.fsync tests trace the gateway'
case $? in 0) exit 0 ;; 1) exit 1 ;; esac

echo 'npm test needs strace (the storage.fsync tests trace the gateway; Linux only). Install it with' >&2
echo "  your system's strace package" >&2
exit 1
