# What the Fashion-MNIST studies share (scripts/fashion_scale.sh, scripts/fashion_tuned.sh),
# sourced from the project root: the BLAS threads and kernel, the release build, the data and the
# authors' network, so that a seed in one study has the θ0 and the images of the same seed in
# the other. The multi-index study (scripts/multi_index.sh) takes the threads, the build and the
# steps every study has (stop_study, other_step).
export OPENBLAS_NUM_THREADS=${ATF_STUDY_THREADS:-1}
# The study's problems were built, and its checkpoints kept, under OpenBLAS's SkylakeX kernels.
# Other kernels round the GEMMs differently in the last bits: the problems' fingerprints change
# and a solve's checkpoint is refused as being for other numbers. Seen on an AMD EPYC whose
# environment set OPENBLAS_CORETYPE=Haswell (OpenBLAS 0.3.21 itself would choose Cooperlake
# there). So the study pins SkylakeX, over any inherited value; it needs AVX-512. Without it,
# delete the .partial.h5 the message names to start that solve afresh.
if grep -qw avx512f /proc/cpuinfo; then
    [[ ${OPENBLAS_CORETYPE:-SkylakeX} == SkylakeX ]] ||
        echo "$(basename "$0" .sh): OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE replaced by SkylakeX, the study's kernel" >&2
    export OPENBLAS_CORETYPE=SkylakeX
fi
# ATF_STUDY_BUILD=DIR: another release build (say, one of a fixed commit while the tree changes)
build=${ATF_STUDY_BUILD:-build-results}
[[ -x $build/drivers/atf ]] || bash scripts/build.sh "$build" --buildtype=release
atf=$build/drivers/atf

# The authors' network and optimiser (784-128-128-128-128-10, biases, LeCun-normal, x/255; SGD
# lr 0.01, momentum 0.9, cross-entropy); up to 1000 epochs with patience 20.
data=(--data fashion-mnist --split official --n-test 10000)
net=(--hidden 128,128,128,128 --bias --init lecun --no-standardize)

# The fair protocol (fixed sampling, the SGD epoch of the best validation score) and its exact
# models: certified solves, the λ path of every cross-entropy model per fitted example, largest
# first, stopped at the first λ that does worse on the validation rows. exact_options GRID sets
# exact=(…) for a λ grid (fashion_scale.sh takes a longer one from n = 8 000 on).
lambdas=0.1,0.03,0.01,0.003,0.001,0.0003,0.0001
fair=(--sampling fixed --stop best-val)
exact_options() {
    exact=(--penalty balanced+balanced --tol 1e-6 --interpolate-max-n auto
           --xent-lambdas "$1" --xent-lambdas-per-example --xent-path-patience 1)
}

# The `stop` step of either study: Ctrl-C (SIGINT) to every `atf experiment samples` whose
# command line matches "--out $1" (a running step keeps what it has: rows, solved λ, the
# checkpoint of the solve under way, and exits); waits for them, then says $2.
stop_study() {
    local pattern="drivers/atf experiment samples .*--out $1" pids p
    pids=$(pgrep -f -- "$pattern" || true)
    [[ -n $pids ]] || { echo "stop: no step is running" >&2; return 0; }
    for p in $pids; do
      echo "stop: $(ps -o args= -p "$p" | grep -o -- "--out [^ ]*")" >&2
      kill -INT "$p" 2>/dev/null || true
    done
    while pgrep -f -- "$pattern" >/dev/null; do sleep 2; done
    echo "stop: stopped; $2" >&2
}

# The steps every study has, after its own: `stop` (stop_study "$2" "$3") and `list` (the steps
# $4 on stderr, status 0), an unknown step the same with status 1.
other_step() {
    case "$1" in
      stop) stop_study "$2" "$3" ;;
      *) echo "steps: $4" >&2
         [[ "$1" == list ]] ;;
    esac
}
