"""The Kubernetes client every layer above uses: kubeconfig and in-cluster connections (`connection`,
`kubeconfig`, `exec_credential`), the REST client (`client`), its errors (`errors`), retries that honour
`Retry-After` (`retry`) and waits that watch (`watch`)."""
