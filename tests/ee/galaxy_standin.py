"""A stand-in for Galaxy (its v3 API, what ``ansible-galaxy collection install`` reads) and for a mirror of release
files, on loopback, for tests/ee/build.sh: Galaxy and get.helm.sh are not reachable here. It serves, read-only:

- ``<base>/api/``: the collection tarballs in ``--collections`` (each one's MANIFEST.json gives its name, version and
  dependencies), under the paths ansible-core's ``GalaxyAPI`` reads (ansible/galaxy/api.py: the API root's
  ``available_versions``, a collection, its versions, one version's ``download_url`` and ``artifact.sha256``);
- ``<base>/files/<name>``: the files in ``--files`` (helm's release archive).

The base path is ``/<digest>/``, a SHA-256 of the content served: the address goes into the image build as a build
argument, so podman's layer cache, keyed on the arguments, is reused exactly while the content is the same (a rebuilt
tarball of the same files included).

    python tests/ee/galaxy_standin.py --collections DIR --files DIR --port N --url-file PATH

The server writes its base URL to ``--url-file`` once it listens, then serves until it is stopped.
"""

import argparse
import glob
import hashlib
import http.server
import json
import os
import tarfile


def sha256_of(path):
    with open(path, "rb") as stream:
        return hashlib.sha256(stream.read()).hexdigest()


def manifest_of(tarball):
    """The raw MANIFEST.json of a collection tarball: its name, version and dependencies, and through FILES.json's
    checksum the digest of every file (no timestamp: the same content gives the same bytes, where the tarball's own
    gzip header does not)."""
    with tarfile.open(tarball, "r:gz") as archive:
        return archive.extractfile("MANIFEST.json").read()


class Catalog:
    """What the stand-in serves: collections by ``(namespace, name)`` then version, and files by name."""

    def __init__(self, collections_dir, files_dir):
        self.collections = {}
        self.files = {}
        for path in sorted(glob.glob(os.path.join(collections_dir, "*.tar.gz"))):
            manifest = manifest_of(path)
            info = json.loads(manifest)["collection_info"]
            versions = self.collections.setdefault((info["namespace"], info["name"]), {})
            versions[info["version"]] = {
                "path": path,
                "sha256": sha256_of(path),
                "content": hashlib.sha256(manifest).hexdigest(),
                "dependencies": info["dependencies"],
            }
        for path in sorted(glob.glob(os.path.join(files_dir, "*"))):
            self.files[os.path.basename(path)] = {"path": path, "sha256": sha256_of(path)}

    def digest(self):
        """One SHA-256 over what is served: each collection's content, each file's bytes."""
        entries = [
            "%s.%s:%s=%s" % (namespace, name, version, served["content"])
            for (namespace, name), versions in self.collections.items()
            for version, served in versions.items()
        ]
        entries += ["%s=%s" % (name, f["sha256"]) for name, f in self.files.items()]
        return hashlib.sha256("\n".join(sorted(entries)).encode()).hexdigest()


def galaxy_answer(catalog, base, parts):
    """The JSON answer for the path ``parts`` under ``<base>/api/``, or None (404)."""
    if parts == []:
        return {"available_versions": {"v3": "v3/"}}
    if len(parts) < 4 or parts[:2] != ["v3", "collections"]:
        return None
    versions = catalog.collections.get((parts[2], parts[3]))
    if versions is None:
        return None
    href = "%s/api/v3/collections/%s/%s/" % (base, parts[2], parts[3])
    if len(parts) == 4:
        stamp = "2026-01-01T00:00:00Z"
        return {"namespace": parts[2], "name": parts[3], "href": href, "created_at": stamp, "updated_at": stamp}
    if len(parts) == 5 and parts[4] == "versions":
        data = [{"version": version, "href": "%sversions/%s/" % (href, version)} for version in versions]
        return {"meta": {"count": len(data)}, "links": {"next": None}, "data": data}
    if len(parts) == 6 and parts[4] == "versions" and parts[5] in versions:
        version = versions[parts[5]]
        return {
            "namespace": {"name": parts[2]},
            "collection": {"name": parts[3]},
            "version": parts[5],
            "href": "%sversions/%s/" % (href, parts[5]),
            "download_url": "%s/download/%s" % (base, os.path.basename(version["path"])),
            "artifact": {"sha256": version["sha256"]},
            "metadata": {"dependencies": version["dependencies"]},
            "signatures": [],
        }
    return None


def handler_for(catalog, base):
    downloads = {os.path.basename(v["path"]): v["path"] for vs in catalog.collections.values() for v in vs.values()}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            path = self.path.split("?", 1)[0]
            if not path.startswith(base + "/"):
                return self.send_error(404)
            parts = [part for part in path[len(base) :].split("/") if part]
            if parts[:1] == ["api"]:
                answer = galaxy_answer(catalog, base, parts[1:])
                if answer is None:
                    return self.send_error(404)
                return self.send(json.dumps(answer).encode(), "application/json")
            if len(parts) == 2 and parts[0] == "download" and parts[1] in downloads:
                return self.send_file(downloads[parts[1]])
            if len(parts) == 2 and parts[0] == "files" and parts[1] in catalog.files:
                return self.send_file(catalog.files[parts[1]]["path"])
            return self.send_error(404)

        def send_file(self, path):
            with open(path, "rb") as stream:
                self.send(stream.read(), "application/octet-stream")

        def send(self, body, content_type):
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", required=True)
    parser.add_argument("--files", required=True)
    parser.add_argument("--port", type=int, required=True, help="0: any free port")
    parser.add_argument("--url-file", required=True)
    args = parser.parse_args(argv)
    catalog = Catalog(args.collections, args.files)
    base = "/" + catalog.digest()[:16]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler_for(catalog, base))
    partial = args.url_file + ".partial"
    with open(partial, "w") as stream:
        stream.write("http://127.0.0.1:%d%s/\n" % (server.server_address[1], base))
    os.replace(partial, args.url_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
