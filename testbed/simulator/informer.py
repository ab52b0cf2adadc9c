"""List-then-watch caches of API objects (plain dicts), resuming from the last resourceVersion.

A watch that ends is resumed from the last event's resourceVersion; a 410 Gone (history compacted)
or any error makes the informer list again, so no event is lost and the cache stays complete.
"""

import json
import logging
import threading
import time

from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

log = logging.getLogger(__name__)

WATCH_TIMEOUT_SECONDS = 300
RETRY_DELAY_SECONDS = 1.0


def object_key(obj):
    metadata = obj["metadata"]
    return (metadata.get("namespace") or "", metadata["name"])


class Informer(object):
    """Keeps ``self.objects`` ({(namespace, name): dict}) in sync and calls ``on_change(kind, old, new)``.

    ``list_call`` is a client list function (``CoreV1Api.list_node``...); ``kwargs`` go to it on both
    list and watch (namespace, label or field selectors). ``old`` is None for an added object and
    ``new`` is None for a deleted one.
    """

    def __init__(self, kind, list_call, on_change, *args, **kwargs):
        self.kind = kind
        self.objects = {}
        self.synced = threading.Event()
        self._list_call = list_call
        self._args = args
        self._kwargs = kwargs
        self._on_change = on_change
        self._lock = threading.Lock()

    def start(self):
        threading.Thread(target=self._run, name="informer-" + self.kind, daemon=True).start()

    def values(self):
        with self._lock:
            return list(self.objects.values())

    def get(self, name, namespace=""):
        with self._lock:
            return self.objects.get((namespace, name))

    def _run(self):
        while True:
            try:
                resource_version = self._relist()
                while resource_version is not None:
                    resource_version = self._watch(resource_version)
            except ApiException as exc:
                if exc.status == 410:
                    log.info("%s watch expired (410 Gone): listing again", self.kind)
                elif exc.status == 404:
                    log.info("%s no longer served (its CRD was deleted): listing again", self.kind)
                else:
                    log.warning("%s watch failed: %s; listing again", self.kind, exc.reason)
            except Exception:  # noqa: BLE001 - a watch thread must survive network errors and restarts
                log.exception("%s watch failed; listing again", self.kind)
            time.sleep(RETRY_DELAY_SECONDS)

    def _relist(self):
        """List into the cache; returns the list's resourceVersion to watch from, or None when the resource is
        not served: a custom resource whose CRD is not installed (yet, or any more) lists as empty until it is."""
        try:
            body = json.loads(self._list_call(*self._args, _preload_content=False, **self._kwargs).data)
        except ApiException as exc:
            if exc.status != 404:
                raise
            body = {"items": [], "metadata": {}}
        listed = {object_key(item): item for item in body["items"]}
        with self._lock:
            previous, self.objects = self.objects, listed
        for key, obj in listed.items():
            old = previous.get(key)
            if old is None or old["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                self._on_change(self.kind, old, obj)
        for key in set(previous) - set(listed):
            self._on_change(self.kind, previous[key], None)
        self.synced.set()
        return body["metadata"].get("resourceVersion")

    def _watch(self, resource_version):
        """Watch until the server closes the stream; return the resourceVersion to resume from."""
        response = self._list_call(
            *self._args,
            watch=True,
            resource_version=resource_version,
            timeout_seconds=WATCH_TIMEOUT_SECONDS,
            allow_watch_bookmarks=True,
            _preload_content=False,
            **self._kwargs,
        )
        try:
            for line in iter_resp_lines(response):
                if line:
                    resource_version = self._handle(json.loads(line))
        finally:
            response.release_conn()
        return resource_version

    def _handle(self, event):
        """Apply one watch event to the cache; return its resourceVersion."""
        obj = event["object"]
        if event["type"] == "ERROR":
            raise ApiException(status=obj.get("code"), reason=obj.get("message"))
        resource_version = obj["metadata"]["resourceVersion"]
        if event["type"] != "BOOKMARK":
            key = object_key(obj)
            with self._lock:
                old = self.objects.get(key)
                if event["type"] == "DELETED":
                    self.objects.pop(key, None)
                else:
                    self.objects[key] = obj
            self._on_change(self.kind, old, None if event["type"] == "DELETED" else obj)
        return resource_version
