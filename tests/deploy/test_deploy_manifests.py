"""The Kubernetes manifests in ``deploy/`` render with kustomize and validate object by object.

- Built-in kinds against the Kubernetes OpenAPI schemas bundled in ``kubernetes-validate``
  (strict: an unknown field is an error), for the oldest and newest Kubernetes versions
  the manifests claim to support.
- The KubeRay ``RayService`` against ``deploy/schemas/rayservice-v1.schema.json`` (strict),
  its pod templates against Kubernetes' own ``PodTemplateSpec``, its ``serveConfigV2``
  against Ray Serve's own config schema (when Ray is installed) and its application
  arguments by building the application Tenet's builder makes of them.
- Cross-references a schema cannot see: every custom metric the HPA scales on is served
  by a Prometheus adapter rule, each rule reads a metric Tenet exports, the probes and the
  Service point at the container's port, the API attaches to the Serve application the
  RayService runs, and the GPU overlay reserves a GPU for every decoder replica.

Rendering uses ``kubectl kustomize`` (kustomize built into kubectl) or a ``kustomize``
binary; without either the module skips.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from app.metrics import REGISTRY

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
OVERLAYS = ("base", "overlays/gpu", "monitoring")
#: The Kubernetes versions the manifests are checked against (oldest and newest supported).
KUBERNETES_VERSIONS = ("1.29", "1.34")
RAYSERVICE_SCHEMA = DEPLOY / "schemas" / "rayservice-v1.schema.json"


def _kustomize_command() -> list[str] | None:
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    return None


@cache
def rendered(overlay: str) -> tuple[dict[str, Any], ...]:
    command = _kustomize_command()
    if command is None:
        pytest.skip("neither kubectl nor kustomize is installed")
    out = subprocess.run(
        [*command, str(DEPLOY / overlay)], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    return tuple(doc for doc in yaml.safe_load_all(out.stdout) if doc)


def _of(overlay: str, kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        d for d in rendered(overlay) if d["kind"] == kind and name in (None, d["metadata"]["name"])
    ]
    assert len(found) == 1, f"{overlay}: {len(found)} {kind} objects"
    return found[0]


def _serve_config(overlay: str) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(_of(overlay, "RayService")["spec"]["serveConfigV2"])
    return config


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_builtin_object_validates_strictly(overlay: str, version: str) -> None:
    builtin = [
        d
        for d in rendered(overlay)
        if "." not in d["apiVersion"].split("/")[0]
        or d["apiVersion"].split("/")[0].endswith(".k8s.io")
    ]
    assert builtin
    for doc in builtin:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = ".".join(str(p) for p in exc.path)
            raise AssertionError(
                f"{overlay}: {doc['kind']}/{doc['metadata']['name']}: {where}: {exc.message}"
            ) from None


def test_the_validator_catches_what_it_should() -> None:
    deployment = json.loads(json.dumps(_of("base", "Deployment", "tenet-api")))
    deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["paht"] = (
        "/x"
    )
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)
    ray = json.loads(json.dumps(_of("base", "RayService")))
    ray["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replica"] = 2
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(ray, json.loads(RAYSERVICE_SCHEMA.read_text()))


@pytest.mark.parametrize("overlay", ["base", "overlays/gpu"])
def test_the_rayservice_and_its_pod_templates_validate(overlay: str) -> None:
    service = _of(overlay, "RayService")
    jsonschema.validate(service, json.loads(RAYSERVICE_SCHEMA.read_text()))
    cluster = service["spec"]["rayClusterConfig"]
    groups = [cluster["headGroupSpec"], *cluster.get("workerGroupSpecs", [])]
    for group in groups:
        template = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "check"},
            "template": group["template"],
        }
        kubernetes_validate.validate(template, KUBERNETES_VERSIONS[-1], strict=True)
    for group in cluster.get("workerGroupSpecs", []):
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"], group["groupName"]


@pytest.mark.parametrize("overlay", ["base", "overlays/gpu"])
def test_the_serve_config_is_one_ray_serve_accepts_and_tenet_builds(overlay: str) -> None:
    schema = pytest.importorskip("ray.serve.schema", reason="the ray extra is not installed")
    from inference.workers.ray_replica import build_app
    from inference.workers.ray_serve import APP_NAME

    config = _serve_config(overlay)
    unknown = set(config) - set(schema.ServeDeploySchema.model_fields)
    assert not unknown, f"keys Ray Serve does not know: {unknown}"
    parsed = schema.ServeDeploySchema.model_validate(config)
    assert str(parsed.proxy_location.value) == "Disabled"  # Tenet reaches workers by handle
    (app,) = parsed.applications
    assert app.name == APP_NAME  # the API attaches to the application of this name
    assert app.import_path == "inference.workers.ray_replica:build_app"
    build_app(app.args)  # unknown arguments or worker fields raise here


def test_the_ray_cluster_runs_the_ray_version_tenet_pins() -> None:
    pinned = re.search(r'"ray\[serve\]==([^"]+)"', (REPO / "pyproject.toml").read_text())
    assert pinned is not None, "pyproject.toml pins no ray[serve]"
    for overlay in ("base", "overlays/gpu"):
        cluster = _of(overlay, "RayService")["spec"]["rayClusterConfig"]
        assert cluster["rayVersion"] == pinned.group(1), overlay


def test_the_gpu_overlay_reserves_one_gpu_per_decoder_replica() -> None:
    args = _serve_config("overlays/gpu")["applications"][0]["args"]
    assert args["replica_gpus"] == 1 and args["worker"]["device"] == "cuda"
    groups = _of("overlays/gpu", "RayService")["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    for group in groups:
        (container,) = group["template"]["spec"]["containers"]
        gpus = int(container["resources"]["limits"]["nvidia.com/gpu"])
        assert gpus >= 1 and group["rayStartParams"]["num-gpus"] == str(gpus)
        assert container["image"].endswith("-cuda")
    # At most as many decoder replicas as the worker pods' GPUs.
    assert args["max_replicas"] <= sum(g["maxReplicas"] for g in groups)
    base_args = _serve_config("base")["applications"][0]["args"]
    assert base_args["replica_gpus"] == 0


def test_the_hpa_scales_on_metrics_the_adapter_serves_from_what_tenet_exports() -> None:
    rules = yaml.safe_load(_of("monitoring", "ConfigMap")["data"]["config.yaml"])["rules"]
    served = {rule["name"]["as"]: rule for rule in rules}
    exported = {metric.name for metric in REGISTRY.collect()}
    for rule in rules:
        series = rule["seriesQuery"].split("{", 1)[0].strip("'\"")
        base = series.removesuffix("_bucket")
        assert base in exported, f"the adapter reads {series}, which Tenet does not export"
    hpa = _of("base", "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == _of("base", "Deployment")["metadata"]["name"]
    custom = [m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"]
    assert {"tenet_http_request_p90_seconds", "tenet_queue_depth"} <= set(custom)
    for name in custom:
        assert name in served, f"the HPA scales on {name}, which no adapter rule serves"


def test_the_api_probes_service_and_secret_fit_together() -> None:
    deployment = _of("base", "Deployment", "tenet-api")
    pod = deployment["spec"]["template"]["spec"]
    (api,) = pod["containers"]
    ports = {p["name"]: p["containerPort"] for p in api["ports"]}
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert api["startupProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert api[probe]["httpGet"]["port"] in ports
    service = _of("base", "Service", "tenet-api")
    assert (
        service["spec"]["selector"].items()
        <= deployment["spec"]["template"]["metadata"]["labels"].items()
    )
    assert all(p["targetPort"] in ports for p in service["spec"]["ports"])
    pdb = _of("base", "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    # The external services' URLs come from the Secret, under the variable names Tenet reads.
    secret = _of("base", "Secret", "tenet-external")
    assert {"TENET_DATABASE_URL", "TENET_REDIS_URL"} <= set(secret["stringData"])
    assert secret["stringData"]["TENET_DATABASE_URL"].startswith("postgresql+asyncpg://")
    refs = [e["secretRef"]["name"] for e in api["envFrom"]]
    assert refs == ["tenet-external"]
    env = {e["name"]: e.get("value") for e in api["env"]}
    assert env["TENET_WORKERS"] == "ray"
    head_service = f"{_of('base', 'RayService')['metadata']['name']}-head-svc"
    assert env["TENET_RAY_ADDRESS"].startswith(f"ray://{head_service}:")
    # Migrations run before the API starts (under their advisory lock).
    (migrate,) = pod["initContainers"]
    assert migrate["command"] == ["tenet", "db", "upgrade"]
    # Tenet's settings accept every TENET_* value the manifests set.
    from app.settings import Settings

    variables = {k: v for k, v in env.items() if k.startswith("TENET_") and v is not None}
    variables.update(secret["stringData"])
    Settings.from_env({k: v for k, v in variables.items() if k.startswith("TENET_")})
