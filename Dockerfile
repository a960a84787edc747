# The image `jobs/` submit to Ray: a Ray base image with ecab installed (CPU torch).
FROM rayproject/ray:2.60.0-py311-cpu
# python_execute runs each call in a bubblewrap sandbox (docs/decisions.md#sandbox); without bwrap every call
# answers "sandbox unavailable". The base image runs as `ray`: install as root, then back to `ray`.
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap \
 && rm -rf /var/lib/apt/lists/*
USER ray
WORKDIR /home/ray/ecab
COPY --chown=ray:users pyproject.toml README.md ./
COPY --chown=ray:users ecab ./ecab
COPY --chown=ray:users conf ./conf
COPY --chown=ray:users jobs ./jobs
RUN pip install --no-cache-dir "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu \
 && pip install --no-cache-dir -e .
ENV RAY_USAGE_STATS_ENABLED=0 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# The build checks what it can: bwrap is installed and runs. It cannot run a sandboxed call: a sandbox needs
# new user namespaces, which `docker build` does not allow (Docker's default seccomp profile, no
# CAP_SYS_ADMIN). The container checks the rest: the health check below is one python_execute call through
# ecab's sandbox (`print(6 * 7)` must answer 42), so a node where python_execute cannot run is `unhealthy`
# in `docker ps`. Run it by hand: docker run --rm <image> python -c "<the code below>" (jobs/README.md).
RUN bwrap --version
HEALTHCHECK --interval=10m --timeout=60s --start-period=30s --retries=1 \
    CMD ["python", "-c", "from ecab.env.sandbox import sandbox_status; s = sandbox_status(); print(s.line()); raise SystemExit(0 if s.available else 1)"]
