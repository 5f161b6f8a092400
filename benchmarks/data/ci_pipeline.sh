#!/usr/bin/env bash
# ci/pipeline.sh: the whole CI job of a monorepo (python services, a web frontend, helm
# charts, terraform), run by the CI runner as one command.
set -euxo pipefail
shopt -s nullglob globstar
IFS=$'\n\t'

export DEBIAN_FRONTEND=noninteractive
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_NO_CACHE_DIR=1
export PYTHONDONTWRITEBYTECODE=1
export NODE_OPTIONS="--max-old-space-size=4096"
export DOCKER_BUILDKIT=1
export COMPOSE_PROJECT_NAME="ci-${CI_PIPELINE_ID:-local}"

ROOT="$(git rev-parse --show-toplevel)"
cd "$ROOT"
ARTIFACTS="${ROOT}/artifacts"
REPORTS="${ARTIFACTS}/reports"
CACHE_DIR="${CI_CACHE_DIR:-${ROOT}/.ci-cache}"
REGISTRY="${CI_REGISTRY:-registry.example.com/platform}"
SHA="$(git rev-parse --short=12 HEAD)"
BRANCH="${CI_COMMIT_BRANCH:-$(git rev-parse --abbrev-ref HEAD)}"
TAG="${CI_COMMIT_TAG:-}"
JOBS="$(nproc 2>/dev/null || echo 2)"
PYTHON_VERSIONS=(3.10 3.11 3.12)
SERVICES=(billing catalog gateway identity notifier orders reports search inventory)
START_TIME="$(date +%s)"

log() { printf '\n==> [%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
elapsed() { echo $(( $(date +%s) - START_TIME )); }

on_exit() {
    local status=$?
    log "pipeline finished with status ${status} after $(elapsed)s"
    if [ "$status" -ne 0 ]; then
        docker compose -f ci/compose.yml logs --no-color --tail 200 > "${REPORTS}/compose.log" 2>&1 || true
        docker compose -f ci/compose.yml down --volumes --remove-orphans || true
    fi
    rm -rf "${ROOT}/.tmp-ci"
    exit "$status"
}
trap on_exit EXIT
trap 'warn "interrupted"; exit 130' INT TERM

retry() {
    local attempts="$1" delay="$2"
    shift 2
    local n=1
    until "$@"; do
        if (( n >= attempts )); then
            warn "giving up after ${n} attempts: $*"
            return 1
        fi
        warn "attempt ${n}/${attempts} failed: $*; retrying in ${delay}s"
        sleep "$delay"
        n=$(( n + 1 ))
        delay=$(( delay * 2 ))
    done
}

changed() {
    # whether anything under the given paths changed since the merge base
    local base
    base="$(git merge-base HEAD "origin/${CI_DEFAULT_BRANCH:-main}" 2>/dev/null || echo HEAD~1)"
    ! git diff --quiet "$base" HEAD -- "$@"
}

version_of() {
    local service="$1"
    grep -E '^version *= *' "services/${service}/pyproject.toml" | head -n 1 | cut -d'"' -f2
}

log "preparing the runner"
mkdir -p "$ARTIFACTS" "$REPORTS" "$CACHE_DIR/pip" "$CACHE_DIR/npm" "${ROOT}/.tmp-ci"
retry 3 5 sudo apt-get update -qq
retry 3 5 sudo apt-get install -y -qq --no-install-recommends \
    build-essential libpq-dev libffi-dev libssl-dev pkg-config \
    postgresql-client redis-tools jq unzip zip shellcheck xvfb \
    python3-venv python3-dev graphviz gettext
sudo apt-get clean
jq --version
shellcheck --version | head -n 2
docker version --format '{{.Server.Version}}'
docker compose version
git config --global --add safe.directory "$ROOT"
git fetch --no-tags --depth=200 origin "${CI_DEFAULT_BRANCH:-main}"

log "checking shell scripts"
mapfile -t scripts < <(git ls-files '*.sh' 'bin/*')
if (( ${#scripts[@]} > 0 )); then
    shellcheck -x -S warning "${scripts[@]}"
fi

log "setting up python"
python3 -m venv "${ROOT}/.venv"
# shellcheck disable=SC1091
source "${ROOT}/.venv/bin/activate"
python -m pip install --upgrade pip wheel setuptools
python -m pip install --cache-dir "$CACHE_DIR/pip" -r requirements/ci.txt
python -m pip install --cache-dir "$CACHE_DIR/pip" -e "libs/common[dev]" -e "libs/testing"
pip list --format=freeze > "${REPORTS}/pip-freeze.txt"
pip check

log "linting python"
ruff check --output-format=github .
ruff format --check .
mypy --config-file mypy.ini libs services | tee "${REPORTS}/mypy.txt"
bandit -q -r services libs -c pyproject.toml -f json -o "${REPORTS}/bandit.json" || warn "bandit found issues"
pip-audit -r requirements/ci.txt --format json --output "${REPORTS}/pip-audit.json" || warn "pip-audit found advisories"

log "starting the test services"
cat > ci/compose.override.yml <<YAML
services:
  postgres:
    image: postgres:16-alpine
    environment:
      POSTGRES_USER: ci
      POSTGRES_PASSWORD: ci
      POSTGRES_DB: ci
    ports: ["127.0.0.1:5432:5432"]
  redis:
    image: redis:7-alpine
    ports: ["127.0.0.1:6379:6379"]
YAML
docker compose -f ci/compose.yml -f ci/compose.override.yml up -d --wait postgres redis
export DATABASE_URL="postgresql://ci:ci@127.0.0.1:5432/ci"
export REDIS_URL="redis://127.0.0.1:6379/0"
retry 10 1 pg_isready -h 127.0.0.1 -p 5432 -U ci
retry 10 1 redis-cli -h 127.0.0.1 ping

log "testing the shared libraries"
for lib in libs/*/; do
    name="$(basename "$lib")"
    [ -f "${lib}pyproject.toml" ] || continue
    pytest -q -p no:cacheprovider "${lib}tests" \
        --junitxml="${REPORTS}/junit-lib-${name}.xml" \
        --cov="${lib}src" --cov-report="xml:${REPORTS}/coverage-lib-${name}.xml"
done

log "service billing: lint, test, build"
if changed services/billing libs requirements || [ -n "$TAG" ]; then
    pushd services/billing >/dev/null
    version="$(version_of billing)"
    [ -n "$version" ] || die "services/billing: no version in pyproject.toml"
    python -m pip install --cache-dir "$CACHE_DIR/pip" -e ".[test]"
    python -m billing.manage migrate --database-url "$DATABASE_URL" --check || \
        python -m billing.manage migrate --database-url "$DATABASE_URL"
    for py in "${PYTHON_VERSIONS[@]}"; do
        if command -v "python${py}" >/dev/null 2>&1; then
            "python${py}" -m compileall -q src
        else
            warn "python${py} not installed; skipping the compile check"
        fi
    done
    pytest -q -n "$JOBS" -p no:cacheprovider tests \
        --junitxml="${REPORTS}/junit-billing.xml" \
        --cov=src/billing --cov-report="xml:${REPORTS}/coverage-billing.xml" \
        --cov-fail-under=85 \
        -m "not slow and not e2e"
    case "$BRANCH" in
        main|release/*)
            pytest -q -p no:cacheprovider tests -m slow --timeout=600 \
                --junitxml="${REPORTS}/junit-billing-slow.xml"
            ;;
        *)
            echo "slow tests of billing run on main and release branches only"
            ;;
    esac
    docker build \
        --pull \
        --build-arg "SERVICE=billing" \
        --build-arg "VERSION=${version}" \
        --build-arg "GIT_SHA=${SHA}" \
        --cache-from "${REGISTRY}/billing:cache" \
        --label "org.opencontainers.image.revision=${SHA}" \
        --label "org.opencontainers.image.version=${version}" \
        -t "${REGISTRY}/billing:${SHA}" \
        -f Dockerfile .
    docker run --rm "${REGISTRY}/billing:${SHA}" billing --version
    cid="$(docker run -d -p 127.0.0.1:8101:8000 -e DATABASE_URL -e REDIS_URL --network host "${REGISTRY}/billing:${SHA}")"
    retry 10 2 curl -fsS "http://127.0.0.1:8101/healthz"
    curl -fsS "http://127.0.0.1:8101/metrics" | grep -c '^billing_' || warn "billing: no metrics yet"
    docker logs "$cid" > "${REPORTS}/billing-container.log" 2>&1
    docker rm -f "$cid"
    echo "billing ${version} ${SHA}" >> "${ARTIFACTS}/images.txt"
    popd >/dev/null
else
    echo "services/billing: unchanged, skipped"
fi

log "service catalog: lint, test, build"
if changed services/catalog libs requirements || [ -n "$TAG" ]; then
    pushd services/catalog >/dev/null
    version="$(version_of catalog)"
    [ -n "$version" ] || die "services/catalog: no version in pyproject.toml"
    python -m pip install --cache-dir "$CACHE_DIR/pip" -e ".[test]"
    python -m catalog.manage migrate --database-url "$DATABASE_URL" --check || \
        python -m catalog.manage migrate --database-url "$DATABASE_URL"
    for py in "${PYTHON_VERSIONS[@]}"; do
        if command -v "python${py}" >/dev/null 2>&1; then
            "python${py}" -m compileall -q src
        else
            warn "python${py} not installed; skipping the compile check"
        fi
    done
    pytest -q -n "$JOBS" -p no:cacheprovider tests \
        --junitxml="${REPORTS}/junit-catalog.xml" \
        --cov=src/catalog --cov-report="xml:${REPORTS}/coverage-catalog.xml" \
        --cov-fail-under=80 \
        -m "not slow and not e2e"
    case "$BRANCH" in
        main|release/*)
            pytest -q -p no:cacheprovider tests -m slow --timeout=600 \
                --junitxml="${REPORTS}/junit-catalog-slow.xml"
            ;;
        *)
            echo "slow tests of catalog run on main and release branches only"
            ;;
    esac
    docker build \
        --pull \
        --build-arg "SERVICE=catalog" \
        --build-arg "VERSION=${version}" \
        --build-arg "GIT_SHA=${SHA}" \
        --cache-from "${REGISTRY}/catalog:cache" \
        --label "org.opencontainers.image.revision=${SHA}" \
        --label "org.opencontainers.image.version=${version}" \
        -t "${REGISTRY}/catalog:${SHA}" \
        -f Dockerfile .
    docker run --rm "${REGISTRY}/catalog:${SHA}" catalog --version
    cid="$(docker run -d -p 127.0.0.1:8102:8000 -e DATABASE_URL -e REDIS_URL --network host "${REGISTRY}/catalog:${SHA}")"
    retry 10 2 curl -fsS "http://127.0.0.1:8102/healthz"
    curl -fsS "http://127.0.0.1:8102/metrics" | grep -c '^catalog_' || warn "catalog: no metrics yet"
    docker logs "$cid" > "${REPORTS}/catalog-container.log" 2>&1
    docker rm -f "$cid"
    echo "catalog ${version} ${SHA}" >> "${ARTIFACTS}/images.txt"
    popd >/dev/null
else
    echo "services/catalog: unchanged, skipped"
fi

log "service gateway: lint, test, build"
if changed services/gateway libs requirements || [ -n "$TAG" ]; then
    pushd services/gateway >/dev/null
    version="$(version_of gateway)"
    [ -n "$version" ] || die "services/gateway: no version in pyproject.toml"
    python -m pip install --cache-dir "$CACHE_DIR/pip" -e ".[test]"
    python -m gateway.manage migrate --database-url "$DATABASE_URL" --check || \
        python -m gateway.manage migrate --database-url "$DATABASE_URL"
    for py in "${PYTHON_VERSIONS[@]}"; do
        if command -v "python${py}" >/dev/null 2>&1; then
            "python${py}" -m compileall -q src
        else
            warn "python${py} not installed; skipping the compile check"
        fi
    done
    pytest -q -n "$JOBS" -p no:cacheprovider tests \
        --junitxml="${REPORTS}/junit-gateway.xml" \
        --cov=src/gateway --cov-report="xml:${REPORTS}/coverage-gateway.xml" \
        --cov-fail-under=90 \
        -m "not slow and not e2e"
    case "$BRANCH" in
        main|release/*)
            pytest -q -p no:cacheprovider tests -m slow --timeout=600 \
                --junitxml="${REPORTS}/junit-gateway-slow.xml"
            ;;
        *)
            echo "slow tests of gateway run on main and release branches only"
            ;;
    esac
    docker build \
        --pull \
        --build-arg "SERVICE=gateway" \
        --build-arg "VERSION=${version}" \
        --build-arg "GIT_SHA=${SHA}" \
        --cache-from "${REGISTRY}/gateway:cache" \
        --label "org.opencontainers.image.revision=${SHA}" \
        --label "org.opencontainers.image.version=${version}" \
        -t "${REGISTRY}/gateway:${SHA}" \
        -f Dockerfile .
    docker run --rm "${REGISTRY}/gateway:${SHA}" gateway --version
    cid="$(docker run -d -p 127.0.0.1:8103:8000 -e DATABASE_URL -e REDIS_URL --network host "${REGISTRY}/gateway:${SHA}")"
    retry 10 2 curl -fsS "http://127.0.0.1:8103/healthz"
    curl -fsS "http://127.0.0.1:8103/metrics" | grep -c '^gateway_' || warn "gateway: no metrics yet"
    docker logs "$cid" > "${REPORTS}/gateway-container.log" 2>&1
    docker rm -f "$cid"
    echo "gateway ${version} ${SHA}" >> "${ARTIFACTS}/images.txt"
    popd >/dev/null
else
    echo "services/gateway: unchanged, skipped"
fi

log "service identity: lint, test, build"
if changed services/identity libs requirements || [ -n "$TAG" ]; then
    pushd services/identity >/dev/null
    version="$(version_of identity)"
    [ -n "$version" ] || die "services/identity: no version in pyproject.toml"
    python -m pip install --cache-dir "$CACHE_DIR/pip" -e ".[test]"
    python -m identity.manage migrate --database-url "$DATABASE_URL" --check || \
        python -m identity.manage migrate --database-url "$DATABASE_URL"
    for py in "${PYTHON_VERSIONS[@]}"; do
        if command -v "python${py}" >/dev/null 2>&1; then
            "python${py}" -m compileall -q src
        else
            warn "python${py} not installed; skipping the compile check"
        fi
    done
    pytest -q -n "$JOBS" -p no:cacheprovider tests \
        --junitxml="${REPORTS}/junit-identity.xml" \
        --cov=src/identity --cov-report="xml:${REPORTS}/coverage-identity.xml" \
        --cov-fail-under=92 \
        -m "not slow and not e2e"
    case "$BRANCH" in
        main|release/*)
            pytest -q -p no:cacheprovider tests -m slow --timeout=600 \
                --junitxml="${REPORTS}/junit-identity-slow.xml"
            ;;
        *)
            echo "slow tests of identity run on main and release branches only"
            ;;
    esac
    docker build \
        --pull \
        --build-arg "SERVICE=identity" \
        --build-arg "VERSION=${version}" \
        --build-arg "GIT_SHA=${SHA}" \
        --cache-from "${REGISTRY}/identity:cache" \
        --label "org.opencontainers.image.revision=${SHA}" \
        --label "org.opencontainers.image.version=${version}" \
        -t "${REGISTRY}/identity:${SHA}" \
        -f Dockerfile .
    docker run --rm "${REGISTRY}/identity:${SHA}" identity --version
    cid="$(docker run -d -p 127.0.0.1:8104:8000 -e DATABASE_URL -e REDIS_URL --network host "${REGISTRY}/identity:${SHA}")"
    retry 10 2 curl -fsS "http://127.0.0.1:8104/healthz"
    curl -fsS "http://127.0.0.1:8104/metrics" | grep -c '^identity_' || warn "identity: no metrics yet"
    docker logs "$cid" > "${REPORTS}/identity-container.log" 2>&1
    docker rm -f "$cid"
    echo "identity ${version} ${SHA}" >> "${ARTIFACTS}/images.txt"
    popd >/dev/null
else
    echo "services/identity: unchanged, skipped"
fi

log "service notifier: lint, test, build"
if changed services/notifier libs requirements || [ -n "$TAG" ]; then
    pushd services/notifier >/dev/null
    version="$(version_of notifier)"
    [ -n "$version" ] || die "services/notifier: no version in pyproject.toml"
    python -m pip install --cache-dir "$CACHE_DIR/pip" -e ".[test]"
    python -m notifier.manage migrate --database-url "$DATABASE_URL" --check || \
        python -m notifier.manage migrate --database-url "$DATABASE_URL"
    for py in "${PYTHON_VERSIONS[@]}"; do
        if command -v "python${py}" >/dev/null 2>&1; then
            "python${py}" -m compileall -q src
        else
            warn "python${py} not installed; skipping the compile check"
        fi
    done
    pytest -q -n "$JOBS" -p no:cacheprovider tests \
        --junitxml="${REPORTS}/junit-notifier.xml" \
        --cov=src/notifier --cov-report="xml:${REPORTS}/coverage-notifier.xml" \
        --cov-fail-under=75 \
        -m "not slow and not e2e"
    case "$BRANCH" in
        main|release/*)
            pytest -q -p no:cacheprovider tests -m slow --timeout=600 \
                --junitxml="${REPORTS}/junit-notifier-slow.xml"
            ;;
        *)
            echo "slow tests of notifier run on main and release branches only"
            ;;
    esac
    docker build \
        --pull \
        --build-arg "SERVICE=notifier" \
        --build-arg "VERSION=${version}" \
        --build-arg "GIT_SHA=${SHA}" \
        --cache-from "${REGISTRY}/notifier:cache" \
        --label "org.opencontainers.image.revision=${SHA}" \
        --label "org.opencontainers.image.version=${version}" \
        -t "${REGISTRY}/notifier:${SHA}" \
        -f Dockerfile .
    docker run --rm "${REGISTRY}/notifier:${SHA}" notifier --version
    cid="$(docker run -d -p 127.0.0.1:8105:8000 -e DATABASE_URL -e REDIS_URL --network host "${REGISTRY}/notifier:${SHA}")"
    retry 10 2 curl -fsS "http://127.0.0.1:8105/healthz"
    curl -fsS "http://127.0.0.1:8105/metrics" | grep -c '^notifier_' || warn "notifier: no metrics yet"
    docker logs "$cid" > "${REPORTS}/notifier-container.log" 2>&1
    docker rm -f "$cid"
    echo "notifier ${version} ${SHA}" >> "${ARTIFACTS}/images.txt"
    popd >/dev/null
else
    echo "services/notifier: unchanged, skipped"
fi

log "service orders: lint, test, build"
if changed services/orders libs requirements || [ -n "$TAG" ]; then
    pushd services/orders >/dev/null
    version="$(version_of orders)"
    [ -n "$version" ] || die "services/orders: no version in pyproject.toml"
    python -m pip install --cache-dir "$CACHE_DIR/pip" -e ".[test]"
    python -m orders.manage migrate --database-url "$DATABASE_URL" --check || \
        python -m orders.manage migrate --database-url "$DATABASE_URL"
    for py in "${PYTHON_VERSIONS[@]}"; do
        if command -v "python${py}" >/dev/null 2>&1; then
            "python${py}" -m compileall -q src
        else
            warn "python${py} not installed; skipping the compile check"
        fi
    done
    pytest -q -n "$JOBS" -p no:cacheprovider tests \
        --junitxml="${REPORTS}/junit-orders.xml" \
        --cov=src/orders --cov-report="xml:${REPORTS}/coverage-orders.xml" \
        --cov-fail-under=85 \
        -m "not slow and not e2e"
    case "$BRANCH" in
        main|release/*)
            pytest -q -p no:cacheprovider tests -m slow --timeout=600 \
                --junitxml="${REPORTS}/junit-orders-slow.xml"
            ;;
        *)
            echo "slow tests of orders run on main and release branches only"
            ;;
    esac
    docker build \
        --pull \
        --build-arg "SERVICE=orders" \
        --build-arg "VERSION=${version}" \
        --build-arg "GIT_SHA=${SHA}" \
        --cache-from "${REGISTRY}/orders:cache" \
        --label "org.opencontainers.image.revision=${SHA}" \
        --label "org.opencontainers.image.version=${version}" \
        -t "${REGISTRY}/orders:${SHA}" \
        -f Dockerfile .
    docker run --rm "${REGISTRY}/orders:${SHA}" orders --version
    cid="$(docker run -d -p 127.0.0.1:8106:8000 -e DATABASE_URL -e REDIS_URL --network host "${REGISTRY}/orders:${SHA}")"
    retry 10 2 curl -fsS "http://127.0.0.1:8106/healthz"
    curl -fsS "http://127.0.0.1:8106/metrics" | grep -c '^orders_' || warn "orders: no metrics yet"
    docker logs "$cid" > "${REPORTS}/orders-container.log" 2>&1
    docker rm -f "$cid"
    echo "orders ${version} ${SHA}" >> "${ARTIFACTS}/images.txt"
    popd >/dev/null
else
    echo "services/orders: unchanged, skipped"
fi

log "service reports: lint, test, build"
if changed services/reports libs requirements || [ -n "$TAG" ]; then
    pushd services/reports >/dev/null
    version="$(version_of reports)"
    [ -n "$version" ] || die "services/reports: no version in pyproject.toml"
    python -m pip install --cache-dir "$CACHE_DIR/pip" -e ".[test]"
    python -m reports.manage migrate --database-url "$DATABASE_URL" --check || \
        python -m reports.manage migrate --database-url "$DATABASE_URL"
    for py in "${PYTHON_VERSIONS[@]}"; do
        if command -v "python${py}" >/dev/null 2>&1; then
            "python${py}" -m compileall -q src
        else
            warn "python${py} not installed; skipping the compile check"
        fi
    done
    pytest -q -n "$JOBS" -p no:cacheprovider tests \
        --junitxml="${REPORTS}/junit-reports.xml" \
        --cov=src/reports --cov-report="xml:${REPORTS}/coverage-reports.xml" \
        --cov-fail-under=70 \
        -m "not slow and not e2e"
    case "$BRANCH" in
        main|release/*)
            pytest -q -p no:cacheprovider tests -m slow --timeout=600 \
                --junitxml="${REPORTS}/junit-reports-slow.xml"
            ;;
        *)
            echo "slow tests of reports run on main and release branches only"
            ;;
    esac
    docker build \
        --pull \
        --build-arg "SERVICE=reports" \
        --build-arg "VERSION=${version}" \
        --build-arg "GIT_SHA=${SHA}" \
        --cache-from "${REGISTRY}/reports:cache" \
        --label "org.opencontainers.image.revision=${SHA}" \
        --label "org.opencontainers.image.version=${version}" \
        -t "${REGISTRY}/reports:${SHA}" \
        -f Dockerfile .
    docker run --rm "${REGISTRY}/reports:${SHA}" reports --version
    cid="$(docker run -d -p 127.0.0.1:8107:8000 -e DATABASE_URL -e REDIS_URL --network host "${REGISTRY}/reports:${SHA}")"
    retry 10 2 curl -fsS "http://127.0.0.1:8107/healthz"
    curl -fsS "http://127.0.0.1:8107/metrics" | grep -c '^reports_' || warn "reports: no metrics yet"
    docker logs "$cid" > "${REPORTS}/reports-container.log" 2>&1
    docker rm -f "$cid"
    echo "reports ${version} ${SHA}" >> "${ARTIFACTS}/images.txt"
    popd >/dev/null
else
    echo "services/reports: unchanged, skipped"
fi

log "service search: lint, test, build"
if changed services/search libs requirements || [ -n "$TAG" ]; then
    pushd services/search >/dev/null
    version="$(version_of search)"
    [ -n "$version" ] || die "services/search: no version in pyproject.toml"
    python -m pip install --cache-dir "$CACHE_DIR/pip" -e ".[test]"
    python -m search.manage migrate --database-url "$DATABASE_URL" --check || \
        python -m search.manage migrate --database-url "$DATABASE_URL"
    for py in "${PYTHON_VERSIONS[@]}"; do
        if command -v "python${py}" >/dev/null 2>&1; then
            "python${py}" -m compileall -q src
        else
            warn "python${py} not installed; skipping the compile check"
        fi
    done
    pytest -q -n "$JOBS" -p no:cacheprovider tests \
        --junitxml="${REPORTS}/junit-search.xml" \
        --cov=src/search --cov-report="xml:${REPORTS}/coverage-search.xml" \
        --cov-fail-under=80 \
        -m "not slow and not e2e"
    case "$BRANCH" in
        main|release/*)
            pytest -q -p no:cacheprovider tests -m slow --timeout=600 \
                --junitxml="${REPORTS}/junit-search-slow.xml"
            ;;
        *)
            echo "slow tests of search run on main and release branches only"
            ;;
    esac
    docker build \
        --pull \
        --build-arg "SERVICE=search" \
        --build-arg "VERSION=${version}" \
        --build-arg "GIT_SHA=${SHA}" \
        --cache-from "${REGISTRY}/search:cache" \
        --label "org.opencontainers.image.revision=${SHA}" \
        --label "org.opencontainers.image.version=${version}" \
        -t "${REGISTRY}/search:${SHA}" \
        -f Dockerfile .
    docker run --rm "${REGISTRY}/search:${SHA}" search --version
    cid="$(docker run -d -p 127.0.0.1:8108:8000 -e DATABASE_URL -e REDIS_URL --network host "${REGISTRY}/search:${SHA}")"
    retry 10 2 curl -fsS "http://127.0.0.1:8108/healthz"
    curl -fsS "http://127.0.0.1:8108/metrics" | grep -c '^search_' || warn "search: no metrics yet"
    docker logs "$cid" > "${REPORTS}/search-container.log" 2>&1
    docker rm -f "$cid"
    echo "search ${version} ${SHA}" >> "${ARTIFACTS}/images.txt"
    popd >/dev/null
else
    echo "services/search: unchanged, skipped"
fi

log "service inventory: lint, test, build"
if changed services/inventory libs requirements || [ -n "$TAG" ]; then
    pushd services/inventory >/dev/null
    version="$(version_of inventory)"
    [ -n "$version" ] || die "services/inventory: no version in pyproject.toml"
    python -m pip install --cache-dir "$CACHE_DIR/pip" -e ".[test]"
    python -m inventory.manage migrate --database-url "$DATABASE_URL" --check || \
        python -m inventory.manage migrate --database-url "$DATABASE_URL"
    for py in "${PYTHON_VERSIONS[@]}"; do
        if command -v "python${py}" >/dev/null 2>&1; then
            "python${py}" -m compileall -q src
        else
            warn "python${py} not installed; skipping the compile check"
        fi
    done
    pytest -q -n "$JOBS" -p no:cacheprovider tests \
        --junitxml="${REPORTS}/junit-inventory.xml" \
        --cov=src/inventory --cov-report="xml:${REPORTS}/coverage-inventory.xml" \
        --cov-fail-under=85 \
        -m "not slow and not e2e"
    case "$BRANCH" in
        main|release/*)
            pytest -q -p no:cacheprovider tests -m slow --timeout=600 \
                --junitxml="${REPORTS}/junit-inventory-slow.xml"
            ;;
        *)
            echo "slow tests of inventory run on main and release branches only"
            ;;
    esac
    docker build \
        --pull \
        --build-arg "SERVICE=inventory" \
        --build-arg "VERSION=${version}" \
        --build-arg "GIT_SHA=${SHA}" \
        --cache-from "${REGISTRY}/inventory:cache" \
        --label "org.opencontainers.image.revision=${SHA}" \
        --label "org.opencontainers.image.version=${version}" \
        -t "${REGISTRY}/inventory:${SHA}" \
        -f Dockerfile .
    docker run --rm "${REGISTRY}/inventory:${SHA}" inventory --version
    cid="$(docker run -d -p 127.0.0.1:8109:8000 -e DATABASE_URL -e REDIS_URL --network host "${REGISTRY}/inventory:${SHA}")"
    retry 10 2 curl -fsS "http://127.0.0.1:8109/healthz"
    curl -fsS "http://127.0.0.1:8109/metrics" | grep -c '^inventory_' || warn "inventory: no metrics yet"
    docker logs "$cid" > "${REPORTS}/inventory-container.log" 2>&1
    docker rm -f "$cid"
    echo "inventory ${version} ${SHA}" >> "${ARTIFACTS}/images.txt"
    popd >/dev/null
else
    echo "services/inventory: unchanged, skipped"
fi

log "building the web frontend"
if changed web; then
    pushd web >/dev/null
    npm ci --cache "$CACHE_DIR/npm" --prefer-offline --no-audit --no-fund
    npm run lint -- --max-warnings=0
    npm run typecheck
    npm test -- --ci --reporters=default --reporters=jest-junit --coverage
    npm run build
    du -sh dist
    tar -czf "${ARTIFACTS}/web-${SHA}.tar.gz" -C dist .
    popd >/dev/null
fi

log "checking the helm charts"
for chart in deploy/charts/*/; do
    helm dependency build "$chart"
    helm lint --strict "$chart" --values "${chart}values.yaml"
    helm template "ci-$(basename "$chart")" "$chart" \
        --values "${chart}values.yaml" \
        --set "image.tag=${SHA}" > "${REPORTS}/$(basename "$chart")-rendered.yaml"
    kubeconform -strict -summary -ignore-missing-schemas "${REPORTS}/$(basename "$chart")-rendered.yaml"
done

log "planning the infrastructure"
if changed deploy/terraform; then
    pushd deploy/terraform >/dev/null
    terraform fmt -check -recursive
    terraform init -input=false -backend=false
    terraform validate
    tflint --recursive --format compact
    popd >/dev/null
fi

log "collecting reports"
python - <<'PY'
import glob
import xml.etree.ElementTree as ET

total = failures = errors = skipped = 0
for path in glob.glob("artifacts/reports/junit-*.xml"):
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    for suite in suites:
        total += int(suite.get("tests", 0))
        failures += int(suite.get("failures", 0))
        errors += int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
print(f"tests: {total} failures: {failures} errors: {errors} skipped: {skipped}")
PY
coverage combine --keep "${REPORTS}"/.coverage.* 2>/dev/null || true
find "${REPORTS}" -name '*.xml' -size 0 -print -delete
find . -type d -name __pycache__ -prune -exec rm -rf {} +
rm -rf .pytest_cache .mypy_cache .ruff_cache */__pycache__ build/ dist/
ls -la "${ARTIFACTS}"

log "publishing"
case "$BRANCH" in
    main)
        while read -r name version sha; do
            docker tag "${REGISTRY}/${name}:${sha}" "${REGISTRY}/${name}:main"
            retry 3 5 docker push "${REGISTRY}/${name}:${sha}"
            retry 3 5 docker push "${REGISTRY}/${name}:main"
            echo "pushed ${name} ${version}"
        done < "${ARTIFACTS}/images.txt"
        ;;
    release/*)
        [ -n "$TAG" ] || die "a release branch needs a tag"
        while read -r name version sha; do
            docker tag "${REGISTRY}/${name}:${sha}" "${REGISTRY}/${name}:${version}"
            retry 3 5 docker push "${REGISTRY}/${name}:${version}"
        done < "${ARTIFACTS}/images.txt"
        gh release create "$TAG" "${ARTIFACTS}"/*.tar.gz --notes-file CHANGELOG.md --verify-tag
        ;;
    *)
        echo "branch ${BRANCH}: nothing is published"
        ;;
esac

docker compose -f ci/compose.yml -f ci/compose.override.yml down --volumes --remove-orphans
sha256sum "${ARTIFACTS}"/*.tar.gz > "${ARTIFACTS}/SHA256SUMS" || true
log "done in $(elapsed)s: ${SHA} on ${BRANCH}"
