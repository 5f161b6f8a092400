"""Rule family ``cloud``: commands that destroy cloud resources or a cluster's objects.

Rule ``cloud-destruction`` (``ask`` by default: a person confirms; see :mod:`.decisions`):

- ``aws``: ``s3 rm --recursive``, ``s3 rb --force``, and the delete verbs of data-bearing
  or whole resources (``ec2 terminate-instances``, ``rds delete-db-instance``,
  ``cloudformation delete-stack``, ``dynamodb delete-table``, ``s3api delete-objects``...:
  :data:`_AWS`).  ``aws s3 rm s3://b/key`` (one object), ``aws s3 ls``/``cp`` pass.
- ``gcloud``: ``projects delete`` and ``delete`` of instances, clusters, disks, databases,
  buckets, snapshots...; ``storage rm -r``.  ``gsutil rm -r``/``rm`` of a ``**`` wildcard,
  ``gsutil rb``.  ``az``: ``group delete`` and ``delete`` of a VM, a storage account, a
  database, a cluster, a key vault...; ``storage blob delete-batch``.
- ``terraform``/``tofu``/``terragrunt``: ``destroy`` and ``apply -destroy`` (``plan``, and
  ``apply`` without ``-destroy``, pass); ``pulumi destroy``/``down``, ``pulumi stack rm``;
  ``cdk destroy``; ``eksctl delete cluster``.
- ``kubectl``/``oc``: ``delete`` of namespaces, of everything of a kind (``--all``,
  ``--all-namespaces``), of volumes and claims (``pvc``, ``pv``), of CRDs (every object of
  the kind goes with it) and of nodes.  A single named pod, deployment or service is not
  destruction (a controller makes it again; its data is elsewhere), nor is ``delete -f``.
- ``helm uninstall``/``delete`` (a release: every object it made); ``--dry-run`` passes.
- ``etcdctl del --prefix``/``--from-key`` (a key range), ``consul kv delete -recurse``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from .invocation import Invocation
from .model import Finding
from .options import word_set
from .paths import show
from .run import Rule, Run

RULE = "cloud-destruction"


def positionals(inv: Invocation, valued: Collection[str]) -> list[str]:
    """The words of ``inv`` that are not options: its subcommand path and operands.
    ``valued``: the options that take the next word as their value."""
    out: list[str] = []
    args = inv.args
    i, n = 0, len(args)
    while i < n:
        text = args[i].text
        if text == "--":
            out += [w.text for w in args[i + 1 :]]
            break
        if text.startswith("-") and len(text) > 1:
            i += 2 if text in valued else 1
            continue
        out.append(text)
        i += 1
    return out


def flags(inv: Invocation) -> set[str]:
    """The option words of ``inv``, ``--x=v`` as ``--x``; short bundles as each letter."""
    found: set[str] = set()
    for w in inv.args:
        text = w.text
        if text.startswith("--"):
            found.add(text.partition("=")[0])
        elif text.startswith("-") and len(text) > 1:
            found.add(text.partition("=")[0])
            found.update("-" + c for c in text[1:] if c.isalpha())
    return found


def _finding(inv: Invocation, what: str) -> Finding:
    shown = show(" ".join([inv.shown, *(w.text for w in inv.args)]))[:120]
    return Finding(RULE, shown, f"{shown!r} {what}")


# -- aws --------------------------------------------------------------------------------------

_AWS_VALUED = word_set(
    "--profile --region --output --endpoint-url --query --cli-read-timeout "
    "--cli-connect-timeout --ca-bundle --color"
)
_AWS = {
    "ec2": word_set("terminate-instances delete-volume delete-snapshot delete-vpc"),
    "rds": word_set("delete-db-instance delete-db-cluster delete-db-snapshot"),
    "cloudformation": word_set("delete-stack"),
    "dynamodb": word_set("delete-table"),
    "s3api": word_set("delete-bucket delete-objects"),
    "eks": word_set("delete-cluster delete-nodegroup"),
    "ecs": word_set("delete-cluster"),
    "elasticache": word_set("delete-cache-cluster delete-replication-group"),
    "redshift": word_set("delete-cluster"),
    "efs": word_set("delete-file-system"),
    "ecr": word_set("delete-repository"),
    "route53": word_set("delete-hosted-zone"),
    "kms": word_set("schedule-key-deletion"),
    "opensearch": word_set("delete-domain"),
    "es": word_set("delete-elasticsearch-domain"),
    "docdb": word_set("delete-db-cluster"),
    "neptune": word_set("delete-db-cluster"),
    "glacier": word_set("delete-vault"),
    "backup": word_set("delete-backup-vault delete-recovery-point"),
    "organizations": word_set("close-account"),
}
"""The delete verbs of ``aws`` services that destroy a whole resource or its data."""


def _rule_aws(inv: Invocation, run: Run) -> Finding | None:
    words = positionals(inv, _AWS_VALUED)
    if len(words) < 2:
        return None
    service, verb = words[0], words[1]
    if service == "s3":
        seen = flags(inv)
        if verb == "rm" and "--recursive" in seen and "--dryrun" not in seen:
            return _finding(inv, "deletes every object under the prefix")
        if verb == "rb" and "--force" in seen:
            return _finding(inv, "deletes the bucket and every object in it")
        return None
    if verb in _AWS.get(service, ()):
        if "--dry-run" in flags(inv):
            return None
        return _finding(inv, f"deletes a cloud resource ({service} {verb})")
    return None


# -- gcloud, gsutil, az --------------------------------------------------------------------------

_GCLOUD_VALUED = word_set(
    "--project --account --configuration --zone --region --format --filter --verbosity "
    "--impersonate-service-account --billing-project"
)
_DESTROYED_NOUNS = word_set(
    "projects instances clusters disks databases buckets snapshots volumes tables datasets "
    "backups images node-pools repositories keyrings filestores vm group account server "
    "db cosmosdb aks keyvault flexible-server"
)
"""Resources whose delete loses data or everything in them (gcloud groups, az groups)."""


def _rule_gcloud(inv: Invocation, run: Run) -> Finding | None:
    words = positionals(inv, _GCLOUD_VALUED)
    if "delete" in words:
        k = words.index("delete")
        if k > 0 and words[k - 1] in _DESTROYED_NOUNS:
            return _finding(inv, f"deletes {words[k - 1]} and the data in them")
    if words[:2] == ["storage", "rm"] and flags(inv) & {"-r", "-R", "--recursive"}:
        return _finding(inv, "deletes every object under the prefix")
    return None


def _rule_gsutil(inv: Invocation, run: Run) -> Finding | None:
    words = positionals(inv, word_set("-o -h -p -u"))
    if not words:
        return None
    if words[0] == "rb":
        return _finding(inv, "deletes the bucket")
    if words[0] == "rm" and (
        flags(inv) & {"-r", "-R", "-a"} or any("**" in w or w.endswith("/*") for w in words)
    ):
        return _finding(inv, "deletes every object under the prefix")
    return None


_AZ_VALUED = word_set(
    "--name -n --resource-group -g --subscription --output -o --query --ids "
    "--account-name --source --pattern"
)


def _rule_az(inv: Invocation, run: Run) -> Finding | None:
    words = positionals(inv, _AZ_VALUED)
    if "delete-batch" in words:
        return _finding(inv, "deletes every blob the pattern matches")
    if "delete" in words:
        k = words.index("delete")
        if k > 0 and words[k - 1] in _DESTROYED_NOUNS:
            return _finding(inv, f"deletes the {words[k - 1]} and everything in it")
    return None


# -- infrastructure as code ----------------------------------------------------------------------


def _rule_terraform(inv: Invocation, run: Run) -> Finding | None:
    words = positionals(inv, word_set("-var -var-file -target -state -chdir"))
    seen = flags(inv)
    if words[:1] == ["destroy"] or (words[:1] == ["apply"] and "-destroy" in seen):
        if "-help" in seen or "--help" in seen:
            return None
        return _finding(inv, "destroys every resource of the configuration")
    if inv.name == "terragrunt" and words[:1] == ["run-all"] and "destroy" in words:
        return _finding(inv, "destroys every resource of every module")
    return None


def _rule_pulumi(inv: Invocation, run: Run) -> Finding | None:
    words = positionals(inv, word_set("-s --stack -C --cwd --target"))
    if words[:1] in (["destroy"], ["down"], ["dn"]):
        if "--preview-only" in flags(inv):
            return None
        return _finding(inv, "destroys every resource of the stack")
    if words[:2] in (["stack", "rm"], ["stack", "remove"]):
        return _finding(inv, "deletes the stack and its state")
    return None


def _rule_cdk(inv: Invocation, run: Run) -> Finding | None:
    if positionals(inv, word_set("--profile --app -a"))[:1] == ["destroy"]:
        return _finding(inv, "destroys every resource of the stacks")
    return None


def _rule_eksctl(inv: Invocation, run: Run) -> Finding | None:
    if positionals(inv, word_set("--name --region -r -n -f"))[:2] == ["delete", "cluster"]:
        return _finding(inv, "deletes the cluster and everything running on it")
    return None


# -- clusters -----------------------------------------------------------------------------------

_KUBE_VALUED = word_set(
    "-n --namespace --context --cluster --user --kubeconfig -l --selector -o --output "
    "--field-selector --grace-period --timeout -s --server --token --as --cascade"
)
_KUBE_DESTROYED = word_set(
    "ns namespace namespaces pvc persistentvolumeclaim persistentvolumeclaims pv "
    "persistentvolume persistentvolumes crd crds customresourcedefinition "
    "customresourcedefinitions node nodes no"
)
"""Kinds whose delete loses data or every object inside."""


def _rule_kubectl(inv: Invocation, run: Run) -> Finding | None:
    if "delete" not in [w.text for w in inv.args]:
        return None  # the cheap test first
    words = positionals(inv, _KUBE_VALUED)
    if words[:1] != ["delete"]:
        return None
    seen = flags(inv)
    if any(f.startswith("--dry-run") for f in seen):
        return None
    if seen & {"--all", "-A", "--all-namespaces"}:
        return _finding(inv, "deletes every object of the kind")
    for word in words[1:]:
        for kind in word.split(","):
            kind = kind.partition("/")[0].partition(".")[0].lower()
            if kind in _KUBE_DESTROYED:
                return _finding(inv, f"deletes {kind} objects and what they hold")
    return None


def _rule_helm(inv: Invocation, run: Run) -> Finding | None:
    words = positionals(inv, word_set("-n --namespace --kube-context --kubeconfig --timeout"))
    if words[:1] in (["uninstall"], ["delete"], ["del"], ["un"]) and len(words) > 1:
        if "--dry-run" in flags(inv):
            return None
        return _finding(inv, "uninstalls the release and every object it made")
    return None


def _rule_etcdctl(inv: Invocation, run: Run) -> Finding | None:
    words = positionals(inv, word_set("--endpoints --user --cacert --cert --key -w"))
    if words[:1] == ["del"] and flags(inv) & {"--prefix", "--from-key"}:
        return _finding(inv, "deletes every key of the range")
    return None


def _rule_consul(inv: Invocation, run: Run) -> Finding | None:
    words = positionals(inv, word_set("-http-addr -token -datacenter"))
    if words[:2] == ["kv", "delete"] and "-recurse" in flags(inv):
        return _finding(inv, "deletes every key under the prefix")
    return None


def _table() -> dict[str, tuple[Rule, ...]]:
    rules: dict[str, tuple[Rule, ...]] = {
        "aws": (_rule_aws,),
        "gcloud": (_rule_gcloud,),
        "gsutil": (_rule_gsutil,),
        "az": (_rule_az,),
        "pulumi": (_rule_pulumi,),
        "cdk": (_rule_cdk,),
        "eksctl": (_rule_eksctl,),
        "helm": (_rule_helm,),
        "etcdctl": (_rule_etcdctl,),
        "consul": (_rule_consul,),
    }
    for name in ("terraform", "tofu", "terragrunt"):
        rules[name] = (_rule_terraform,)
    for name in ("kubectl", "oc"):
        rules[name] = (_rule_kubectl,)
    return rules


RULES: dict[str, tuple[Rule, ...]] = _table()

__all__: Sequence[str] = ["RULE", "RULES", "flags", "positionals"]
