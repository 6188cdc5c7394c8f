"""Drive Myriad with the official Kubernetes Python client, an independent
implementation of the wire protocol. Usage: client_check.py KUBECONFIG.
Exits non-zero with a message on the first failed expectation."""
import sys
import threading

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException


def expect(cond, msg):
    if not cond:
        print("FAIL:", msg)
        sys.exit(1)


def main(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    apps = client.AppsV1Api()
    ns = "python-client"
    try:
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    except ApiException as e:
        expect(e.status == 409, f"create namespace: {e.status}")

    cm = core.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="cm1", labels={"app": "py"}), data={"k": "v"}))
    expect(cm.metadata.resource_version, "configmap has a resourceVersion")

    try:
        core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm1")))
        expect(False, "duplicate create succeeded")
    except ApiException as e:
        expect(e.status == 409 and "AlreadyExists" in e.body, f"duplicate create: {e.status} {e.body}")

    stale = cm.metadata.resource_version
    cm.data["k"] = "v2"
    core.replace_namespaced_config_map("cm1", ns, cm)
    cm.metadata.resource_version = stale
    cm.data["k"] = "v3"
    try:
        core.replace_namespaced_config_map("cm1", ns, cm)
        expect(False, "stale replace succeeded")
    except ApiException as e:
        expect(e.status == 409 and "the object has been modified" in e.body, f"stale replace: {e.status} {e.body}")

    patched = core.patch_namespaced_config_map("cm1", ns, {"metadata": {"labels": {"patched": "yes"}}})
    expect(patched.metadata.labels.get("patched") == "yes", "strategic merge patch applied")

    dep = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1DeploymentSpec(
            replicas=2,
            selector=client.V1LabelSelector(match_labels={"app": "web"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "web"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]))))
    d = apps.create_namespaced_deployment(ns, dep)
    expect(d.spec.strategy.type == "RollingUpdate", "deployment defaults applied")
    apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 4}})
    expect(apps.read_namespaced_deployment("web", ns).spec.replicas == 4, "scale subresource")

    try:
        core.create_namespaced_pod(ns, client.V1Pod(metadata=client.V1ObjectMeta(name="Bad_Name"),
                                                    spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="x")])))
        expect(False, "invalid pod accepted")
    except ApiException as e:
        expect(e.status == 422 and "Invalid" in e.body, f"invalid pod: {e.status}")

    listed = core.list_namespaced_config_map(ns, label_selector="app=py")
    expect(len(listed.items) == 1, f"label selector list: {len(listed.items)} items")
    page = core.list_namespaced_config_map(ns, limit=1)
    expect(page.metadata.resource_version, "list has a resourceVersion")

    # Watch from the list's resourceVersion sees a new object.
    seen = []

    def watcher():
        w = watch.Watch()
        for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=listed.metadata.resource_version, timeout_seconds=20):
            seen.append((ev["type"], ev["object"].metadata.name))
            if ev["object"].metadata.name == "cm2":
                w.stop()

    t = threading.Thread(target=watcher)
    t.start()
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm2")))
    t.join(30)
    expect(("ADDED", "cm2") in seen, f"watch saw {seen}")

    core.delete_namespaced_config_map("cm2", ns)
    try:
        core.read_namespaced_config_map("cm2", ns)
        expect(False, "deleted configmap still readable")
    except ApiException as e:
        expect(e.status == 404, f"read after delete: {e.status}")
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
