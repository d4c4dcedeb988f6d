"""Controlled experiments: arms x tasks x repeats, graded, with adherence-adjusted effects.

Declare an `Experiment` of `Arm`s (each a flow plus what differs: its `Factors`, its
`Assigned` organization, `BestOf` k runs), a task set and a grader (`TestsGrader`,
`FunctionGrader`, `RubricGrader`);
`run_experiment` (`swarmflow experiment run`) runs it through the batch engine and
`read_experiment` (`swarmflow experiment report`) reads it back; `regrade_experiment`
(`swarmflow experiment grade`) grades it again from its record. docs/experiments.md.
"""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.experiments.bestof import BestOf as BestOf
    from swarmflow.experiments.breakdowns import macro_rate as macro_rate
    from swarmflow.experiments.breakdowns import mcnemar_exact as mcnemar_exact
    from swarmflow.experiments.breakdowns import weighted_rate as weighted_rate
    from swarmflow.experiments.declaration import Arm as Arm
    from swarmflow.experiments.declaration import Assigned as Assigned
    from swarmflow.experiments.declaration import Experiment as Experiment
    from swarmflow.experiments.execution import ExperimentResult as ExperimentResult
    from swarmflow.experiments.execution import run_experiment as run_experiment
    from swarmflow.experiments.factors import Factors as Factors
    from swarmflow.experiments.graders import FunctionGrader as FunctionGrader
    from swarmflow.experiments.graders import RubricGrader as RubricGrader
    from swarmflow.experiments.graders import TestsGrader as TestsGrader
    from swarmflow.experiments.grading import RunOutcome as RunOutcome
    from swarmflow.experiments.regrade import RegradeResult as RegradeResult
    from swarmflow.experiments.regrade import regrade_experiment as regrade_experiment
    from swarmflow.experiments.report import ExperimentReport as ExperimentReport
    from swarmflow.experiments.report import read_experiment as read_experiment
    from swarmflow.experiments.stats import clopper_pearson as clopper_pearson
    from swarmflow.experiments.stats import sign_test as sign_test
    from swarmflow.experiments.tasks import ExperimentTask as ExperimentTask

export_lazily(__name__)
