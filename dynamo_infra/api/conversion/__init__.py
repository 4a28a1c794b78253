"""v1alpha1 ⇄ v1beta1 conversion (v1beta1 is the hub) of DGD, DCD, DGDSA and DGDR, by the operator's rules.

`fields` is the native mapping (one table, read both ways), `preserve` keeps and restores what the
other version cannot represent, `kinds` holds one record per kind.
"""

from dynamo_infra.api.conversion.kinds import (
    ANN_DCD_SPEC,
    ANN_DCD_STATUS,
    ANN_DGD_SPEC,
    ANN_DGD_STATUS,
    ANN_DGDR_SPEC,
    ANN_DGDR_STATUS,
    convert_to,
    convertible,
    to_other_version,
)

__all__ = [
    "ANN_DCD_SPEC",
    "ANN_DCD_STATUS",
    "ANN_DGDR_SPEC",
    "ANN_DGDR_STATUS",
    "ANN_DGD_SPEC",
    "ANN_DGD_STATUS",
    "convert_to",
    "convertible",
    "to_other_version",
]
