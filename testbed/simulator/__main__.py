"""python -m testbed.simulator --kubeconfig K --kubelet-cert CRT --kubelet-key KEY --client-ca CA [--step-delay S]
[--ready-file F] [--machine-api]: runs until killed; the simulated kubelets' exec endpoint listens on the API
server's port + 3.
"""

import argparse
import logging
import signal
import sys
import threading

from kubernetes import client, config

from testbed.simulator.kubelet_exec import KubeletExecServer, kubelet_port
from testbed.simulator.simulator import Simulator


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m testbed.simulator", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--step-delay", type=float, default=0.2, help="seconds between the steps of a state change")
    parser.add_argument("--ready-file", help="created once the simulator has listed the cluster and runs")
    parser.add_argument("--kubelet-cert", required=True, help="the kubelets' serving certificate (exec endpoint)")
    parser.add_argument("--kubelet-key", required=True)
    parser.add_argument("--client-ca", required=True, help="the CA of the API server's kubelet client certificate")
    parser.add_argument("--machine-api", action="store_true", help="play OpenShift's machine API (its CRDs exist)")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    configuration = client.Configuration()
    config.load_kube_config(config_file=args.kubeconfig, client_configuration=configuration)
    # One connection per watch, worker and lease renewer, so that none waits for another.
    configuration.connection_pool_maxsize = 32
    simulator = Simulator(client.ApiClient(configuration), args.step_delay, machine_api=args.machine_api)
    simulator.start()
    port = kubelet_port(configuration.host)
    KubeletExecServer(simulator, port, args.kubelet_cert, args.kubelet_key, args.client_ca).start()
    if args.ready_file:
        with open(args.ready_file, "w") as ready:
            ready.write("ready\n")
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
