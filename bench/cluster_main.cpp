// kstate-bench-cluster: writes a deterministic cluster of N pods over M nodes as one
// JSON List, for `kstate-emulator --preload` (bench/run.sh times `kstate inventory`
// against it). The objects look like what a real cluster's LIST returns, so the bytes
// kstate reads per pod are realistic: labels, owner references, a pod template's worth
// of spec (resources, probes, volume mounts, tolerations), the managedFields of
// kube-controller-manager and the kubelet, conditions, and container statuses. Nodes
// rotate through containerd, CRI-O and Docker (cri-dockerd), so every imageID form
// appears; 200 distinct images; every 10th pod has an init container, every 50th an
// ephemeral one, every 20th is still Pending with a container being created.
//   kstate-bench-cluster --out FILE --pods 10000 --nodes 100 [--namespaces 50]
#include <openssl/sha.h>
#include <rapidjson/ostreamwrapper.h>
#include <rapidjson/writer.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <utility>

namespace {

using Writer = rapidjson::Writer<rapidjson::OStreamWrapper>;

std::string hex_sha256(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::string out;
  char buffer[3];
  for (unsigned char byte : digest) {
    std::snprintf(buffer, sizeof buffer, "%02x", byte);
    out += buffer;
  }
  return out;
}

const char* const runtimes[] = {"containerd", "cri-o", "docker"};

void key_string(Writer& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value);
}

void node(Writer& w, int index) {
  std::string name = "node-" + std::to_string(index);
  std::string runtime = runtimes[index % 3];
  w.StartObject();
  key_string(w, "apiVersion", "v1");
  key_string(w, "kind", "Node");
  w.Key("metadata");
  w.StartObject();
  key_string(w, "name", name);
  w.Key("labels");
  w.StartObject();
  key_string(w, "kubernetes.io/arch", index % 4 == 3 ? "arm64" : "amd64");
  key_string(w, "kubernetes.io/hostname", name);
  key_string(w, "kubernetes.io/os", "linux");
  key_string(w, "topology.kubernetes.io/zone", "zone-" + std::to_string(index % 3));
  if (index < 3) {
    key_string(w, "node-role.kubernetes.io/control-plane", "");
  }
  w.EndObject();
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  key_string(w, "podCIDR", "10.244." + std::to_string(index) + ".0/24");
  w.EndObject();
  w.Key("status");
  w.StartObject();
  w.Key("capacity");
  w.StartObject();
  key_string(w, "cpu", "16");
  key_string(w, "memory", "65843328Ki");
  key_string(w, "pods", "110");
  w.EndObject();
  w.Key("allocatable");
  w.StartObject();
  key_string(w, "cpu", "15500m");
  key_string(w, "memory", "63254144Ki");
  key_string(w, "pods", "110");
  w.EndObject();
  w.Key("conditions");
  w.StartArray();
  for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}) {
    bool ready = std::string(type) == "Ready";
    w.StartObject();
    key_string(w, "type", type);
    key_string(w, "status", ready ? "True" : "False");
    key_string(w, "reason", ready ? "KubeletReady" : std::string("KubeletHasNo") + type);
    key_string(w, "lastHeartbeatTime", "2024-05-02T09:00:00Z");
    key_string(w, "lastTransitionTime", "2024-05-01T08:00:12Z");
    w.EndObject();
  }
  w.EndArray();
  w.Key("nodeInfo");
  w.StartObject();
  key_string(w, "architecture", index % 4 == 3 ? "arm64" : "amd64");
  key_string(w, "containerRuntimeVersion",
             runtime + "://" +
                 (runtime == "containerd" ? "1.7.12"
                  : runtime == "cri-o"    ? "1.28.2"
                                          : "24.0.7"));
  key_string(w, "kernelVersion", "5.15.0-105-generic");
  key_string(w, "kubeletVersion", "v1.31.0");
  key_string(w, "operatingSystem", "linux");
  key_string(w, "osImage", "Ubuntu 22.04.4 LTS");
  w.EndObject();
  w.EndObject();
  w.EndObject();
}

void managed_fields(Writer& w, bool with_status) {
  w.Key("managedFields");
  w.StartArray();
  w.StartObject();
  key_string(w, "manager", "kube-controller-manager");
  key_string(w, "operation", "Update");
  key_string(w, "apiVersion", "v1");
  key_string(w, "time", "2024-05-02T08:14:55Z");
  key_string(w, "fieldsType", "FieldsV1");
  w.Key("fieldsV1");
  w.StartObject();
  w.Key("f:metadata");
  w.StartObject();
  for (const char* field : {"f:generateName", "f:labels", "f:ownerReferences"}) {
    w.Key(field);
    w.StartObject();
    w.Key(".");
    w.StartObject();
    w.EndObject();
    w.EndObject();
  }
  w.EndObject();
  w.Key("f:spec");
  w.StartObject();
  for (const char* field : {"f:containers", "f:dnsPolicy", "f:enableServiceLinks", "f:restartPolicy", "f:schedulerName",
                            "f:securityContext", "f:terminationGracePeriodSeconds"}) {
    w.Key(field);
    w.StartObject();
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  w.EndObject();
  if (with_status) {
    w.StartObject();
    key_string(w, "manager", "kubelet");
    key_string(w, "operation", "Update");
    key_string(w, "apiVersion", "v1");
    key_string(w, "time", "2024-05-02T08:15:04Z");
    key_string(w, "fieldsType", "FieldsV1");
    key_string(w, "subresource", "status");
    w.Key("fieldsV1");
    w.StartObject();
    w.Key("f:status");
    w.StartObject();
    for (const char* field : {"f:conditions", "f:containerStatuses", "f:hostIP", "f:hostIPs", "f:phase", "f:podIP",
                              "f:podIPs", "f:startTime"}) {
      w.Key(field);
      w.StartObject();
      w.EndObject();
    }
    w.EndObject();
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
}

struct ImageRef {
  std::string reference;  // what the pod asks for
  std::string repository;
  std::string digest;    // repo digest (sha256:...)
  std::string local_id;  // image ID (sha256:...)
};

ImageRef image_of(int index) {
  int image = index % 200;
  std::string repository = "registry.example.com/team/app-" + std::to_string(image);
  return {repository + ":1." + std::to_string(image % 7), repository, "sha256:" + hex_sha256("digest-" + repository),
          "sha256:" + hex_sha256("id-" + repository)};
}

// The imageID a runtime reports for a started container, in its own form.
std::string image_id_for(const std::string& runtime, const ImageRef& image, int index) {
  if (runtime == "docker") {
    return index % 5 == 0 ? "docker://" + image.local_id : "docker-pullable://" + image.repository + "@" + image.digest;
  }
  return index % 7 == 0 ? image.local_id : image.repository + "@" + image.digest;
}

void container_spec(Writer& w, const std::string& name, const std::string& image) {
  w.StartObject();
  key_string(w, "name", name);
  key_string(w, "image", image);
  key_string(w, "imagePullPolicy", "IfNotPresent");
  w.Key("ports");
  w.StartArray();
  w.StartObject();
  w.Key("containerPort");
  w.Int(8080);
  key_string(w, "protocol", "TCP");
  w.EndObject();
  w.EndArray();
  w.Key("resources");
  w.StartObject();
  w.Key("requests");
  w.StartObject();
  key_string(w, "cpu", "100m");
  key_string(w, "memory", "128Mi");
  w.EndObject();
  w.Key("limits");
  w.StartObject();
  key_string(w, "memory", "256Mi");
  w.EndObject();
  w.EndObject();
  w.Key("readinessProbe");
  w.StartObject();
  w.Key("httpGet");
  w.StartObject();
  key_string(w, "path", "/healthz");
  w.Key("port");
  w.Int(8080);
  key_string(w, "scheme", "HTTP");
  w.EndObject();
  w.Key("periodSeconds");
  w.Int(10);
  w.EndObject();
  w.Key("volumeMounts");
  w.StartArray();
  w.StartObject();
  key_string(w, "name", "kube-api-access");
  key_string(w, "mountPath", "/var/run/secrets/kubernetes.io/serviceaccount");
  w.Key("readOnly");
  w.Bool(true);
  w.EndObject();
  w.EndArray();
  key_string(w, "terminationMessagePath", "/dev/termination-log");
  key_string(w, "terminationMessagePolicy", "File");
  w.EndObject();
}

void container_status(Writer& w, const std::string& name, const std::string& image, const std::string& image_id,
                      const std::string& container_id, bool terminated) {
  w.StartObject();
  key_string(w, "name", name);
  key_string(w, "image", image);
  key_string(w, "imageID", image_id);
  if (!container_id.empty()) {
    key_string(w, "containerID", container_id);
  }
  w.Key("ready");
  w.Bool(!image_id.empty() && !terminated);
  w.Key("restartCount");
  w.Int(0);
  w.Key("started");
  w.Bool(!image_id.empty() && !terminated);
  w.Key("lastState");
  w.StartObject();
  w.EndObject();
  w.Key("state");
  w.StartObject();
  if (image_id.empty()) {
    w.Key("waiting");
    w.StartObject();
    key_string(w, "reason", "ContainerCreating");
    w.EndObject();
  } else if (terminated) {
    w.Key("terminated");
    w.StartObject();
    w.Key("exitCode");
    w.Int(0);
    key_string(w, "reason", "Completed");
    key_string(w, "startedAt", "2024-05-02T08:14:58Z");
    key_string(w, "finishedAt", "2024-05-02T08:15:01Z");
    if (!container_id.empty()) {
      key_string(w, "containerID", container_id);
    }
    w.EndObject();
  } else {
    w.Key("running");
    w.StartObject();
    key_string(w, "startedAt", "2024-05-02T08:15:03Z");
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
}

std::string namespace_of(int index, int namespaces) {
  return "team-" + std::to_string(index % namespaces);
}
std::string owner_of(int index) {
  return "app-" + std::to_string(index / 10) + "-7d4b9c6f8d";
}
std::string owner_uid(const std::string& ns, const std::string& owner) {
  return "5b1c8d2e-0000-4000-a000-" + hex_sha256(ns + "/" + owner).substr(0, 12);
}

// The ReplicaSet that owns pods: written because a cluster has it, and because the
// emulator's garbage collector, as kube-controller-manager's, deletes pods whose owner
// is gone.
void replica_set(Writer& w, const std::string& ns, const std::string& owner) {
  w.StartObject();
  key_string(w, "apiVersion", "apps/v1");
  key_string(w, "kind", "ReplicaSet");
  w.Key("metadata");
  w.StartObject();
  key_string(w, "name", owner);
  key_string(w, "namespace", ns);
  key_string(w, "uid", owner_uid(ns, owner));
  key_string(w, "creationTimestamp", "2024-05-02T08:14:50Z");
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  w.Key("selector");
  w.StartObject();
  w.Key("matchLabels");
  w.StartObject();
  key_string(w, "pod-template-hash", "7d4b9c6f8d");
  w.EndObject();
  w.EndObject();
  w.EndObject();
  w.EndObject();
}

void pod(Writer& w, int index, int nodes, int namespaces) {
  std::string ns = namespace_of(index, namespaces);
  std::string owner = owner_of(index);
  std::string name = owner + "-" + hex_sha256("pod-" + std::to_string(index)).substr(0, 5);
  int node_index = index % nodes;
  std::string runtime = runtimes[node_index % 3];
  bool pending = index % 20 == 19;
  bool with_init = index % 10 == 0;
  bool with_ephemeral = index % 50 == 1;
  ImageRef image = image_of(index);
  ImageRef init_image = image_of(index + 101);
  auto container_id = [&](const std::string& container) {
    return runtime + "://" + hex_sha256(name + "/" + container);
  };

  w.StartObject();
  key_string(w, "apiVersion", "v1");
  key_string(w, "kind", "Pod");
  w.Key("metadata");
  w.StartObject();
  key_string(w, "name", name);
  key_string(w, "generateName", owner + "-");
  key_string(w, "namespace", ns);
  key_string(w, "uid", hex_sha256("uid-" + name).substr(0, 8) + "-0000-4000-a000-" + hex_sha256(name).substr(0, 12));
  key_string(w, "creationTimestamp", "2024-05-02T08:14:55Z");
  w.Key("labels");
  w.StartObject();
  key_string(w, "app.kubernetes.io/name", "app-" + std::to_string(index / 10));
  key_string(w, "pod-template-hash", "7d4b9c6f8d");
  w.EndObject();
  w.Key("ownerReferences");
  w.StartArray();
  w.StartObject();
  key_string(w, "apiVersion", "apps/v1");
  key_string(w, "kind", "ReplicaSet");
  key_string(w, "name", owner);
  key_string(w, "uid", owner_uid(ns, owner));
  w.Key("controller");
  w.Bool(true);
  w.Key("blockOwnerDeletion");
  w.Bool(true);
  w.EndObject();
  w.EndArray();
  managed_fields(w, !pending);
  w.EndObject();

  w.Key("spec");
  w.StartObject();
  if (with_init) {
    w.Key("initContainers");
    w.StartArray();
    container_spec(w, "migrate", init_image.reference);
    w.EndArray();
  }
  w.Key("containers");
  w.StartArray();
  container_spec(w, "app", image.reference);
  w.EndArray();
  if (with_ephemeral) {
    w.Key("ephemeralContainers");
    w.StartArray();
    w.StartObject();
    key_string(w, "name", "debugger");
    key_string(w, "image", "busybox:1.36");
    key_string(w, "targetContainerName", "app");
    w.EndObject();
    w.EndArray();
  }
  key_string(w, "nodeName", "node-" + std::to_string(node_index));
  key_string(w, "restartPolicy", "Always");
  key_string(w, "dnsPolicy", "ClusterFirst");
  key_string(w, "schedulerName", "default-scheduler");
  key_string(w, "serviceAccountName", "default");
  w.Key("terminationGracePeriodSeconds");
  w.Int(30);
  w.Key("tolerations");
  w.StartArray();
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    w.StartObject();
    key_string(w, "key", key);
    key_string(w, "operator", "Exists");
    key_string(w, "effect", "NoExecute");
    w.Key("tolerationSeconds");
    w.Int(300);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();

  w.Key("status");
  w.StartObject();
  key_string(w, "phase", pending ? "Pending" : "Running");
  key_string(w, "hostIP", "10.0." + std::to_string(node_index / 250) + "." + std::to_string(node_index % 250 + 1));
  key_string(w, "podIP", "10.244." + std::to_string(node_index) + "." + std::to_string(index % 250 + 2));
  key_string(w, "qosClass", "Burstable");
  key_string(w, "startTime", "2024-05-02T08:14:55Z");
  w.Key("conditions");
  w.StartArray();
  for (const char* type : {"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
    bool waiting = pending && (std::string(type) == "Ready" || std::string(type) == "ContainersReady");
    w.StartObject();
    key_string(w, "type", type);
    key_string(w, "status", waiting ? "False" : "True");
    w.Key("lastProbeTime");
    w.Null();
    key_string(w, "lastTransitionTime", "2024-05-02T08:15:03Z");
    w.EndObject();
  }
  w.EndArray();
  if (with_init) {
    w.Key("initContainerStatuses");
    w.StartArray();
    container_status(w, "migrate", init_image.reference, image_id_for(runtime, init_image, index + 1),
                     container_id("migrate"), true);
    w.EndArray();
  }
  w.Key("containerStatuses");
  w.StartArray();
  if (pending) {
    container_status(w, "app", image.reference, "", "", false);
  } else {
    container_status(w, "app", image.reference, image_id_for(runtime, image, index), container_id("app"), false);
  }
  w.EndArray();
  if (with_ephemeral) {
    ImageRef busybox{"busybox:1.36", "docker.io/library/busybox", "sha256:" + hex_sha256("busybox-1.36"),
                     "sha256:" + hex_sha256("busybox-id")};
    w.Key("ephemeralContainerStatuses");
    w.StartArray();
    container_status(w, "debugger", busybox.reference, image_id_for(runtime, busybox, index), container_id("debugger"),
                     false);
    w.EndArray();
  }
  w.EndObject();
  w.EndObject();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kstate-bench-cluster: a deterministic cluster of nodes and pods for kstate-emulator --preload"};
  std::string out_path;
  int pods = 10000;
  int nodes = 100;
  int namespaces = 50;
  app.add_option("--out", out_path, "JSON file to write")->required();
  app.add_option("--pods", pods, "pods")->check(CLI::Range(0, 10000000));
  app.add_option("--nodes", nodes, "nodes")->check(CLI::Range(1, 100000));
  app.add_option("--namespaces", namespaces, "namespaces the pods spread over")->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);

  std::ofstream file(out_path, std::ios::binary);
  if (!file) {
    std::cerr << "kstate-bench-cluster: cannot write " << out_path << "\n";
    return 1;
  }
  rapidjson::OStreamWrapper stream(file);
  Writer w(stream);
  w.StartObject();
  key_string(w, "apiVersion", "v1");
  key_string(w, "kind", "List");
  w.Key("items");
  w.StartArray();
  for (int i = 0; i < nodes; ++i) {
    node(w, i);
  }
  std::set<std::pair<std::string, std::string>> owners;
  for (int i = 0; i < pods; ++i) {
    owners.emplace(namespace_of(i, namespaces), owner_of(i));
  }
  for (const auto& [ns, owner] : owners) {
    replica_set(w, ns, owner);
  }
  for (int i = 0; i < pods; ++i) {
    pod(w, i, nodes, namespaces);
  }
  w.EndArray();
  w.EndObject();
  file << "\n";
  file.close();
  if (!file) {
    std::cerr << "kstate-bench-cluster: cannot write " << out_path << "\n";
    return 1;
  }
  std::cout << "nodes " << nodes << " pods " << pods << " namespaces " << namespaces << "\n";
  return 0;
}
