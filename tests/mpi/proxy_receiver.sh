#!/bin/sh
# Whether the staged proxy runs its receiver thread: only where a request can
# come (a device heap here, or host memory without RMA windows / with
# USHMEM_PROXY_HOST). A host-only job over MPI must not poll MPI from a
# thread of its own for nothing. Usage: proxy_receiver.sh yes|no mpirun ...
want=$1
shift
out=$(SHMEM_DEBUG=1 "$@" 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
    printf '%s\n' "$out" | tail -20
    echo "FAIL: the job exited with $rc"
    exit 1
fi
npes=$(printf '%s\n' "$out" | grep -c 'shmem_init: proxy: ')
posted=$(printf '%s\n' "$out" | grep -c 'shmem_init: proxy: .*receives of .* posted')
none=$(printf '%s\n' "$out" | grep -c 'shmem_init: proxy: .*no receiver')
echo "proxy lines: $npes, receivers: $posted, none: $none (want receivers: $want)"
if [ "$npes" -lt 2 ]; then
    printf '%s\n' "$out" | tail -20
    echo "FAIL: no PE said whether its proxy receives"
    exit 1
fi
case $want in
yes) [ "$posted" -eq "$npes" ] && [ "$none" -eq 0 ] ;;
no) [ "$none" -eq "$npes" ] && [ "$posted" -eq 0 ] ;;
*) echo "usage: $0 yes|no command..." && exit 2 ;;
esac || {
    echo "FAIL: receivers not as wanted"
    exit 1
}
echo PASS
