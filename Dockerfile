# The image `jobs/` submit to Ray: a Ray base image with ecab installed (CPU torch).
FROM rayproject/ray:2.60.0-py311-cpu
WORKDIR /home/ray/ecab
COPY --chown=ray:users pyproject.toml README.md ./
COPY --chown=ray:users ecab ./ecab
COPY --chown=ray:users conf ./conf
COPY --chown=ray:users jobs ./jobs
RUN pip install --no-cache-dir "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu \
 && pip install --no-cache-dir -e .
ENV RAY_USAGE_STATS_ENABLED=0 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
