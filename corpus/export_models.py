"""Exports the scikit-learn part of the real-model corpus (see corpus/README.md) with skl2onnx.

    python corpus/export_models.py OUT_DIR

Run by corpus/fetch.sh in `.cache/corpus-venv` (pinned scikit-learn, skl2onnx, onnx, numpy, pandas). Every
model is trained on seeded data (iris, or a seeded synthetic table), so a re-export gives the same weights.
Each model is written as OUT_DIR/<name>.onnx and checked with onnx.checker; the names are printed on stdout.
"""

import os
import sys

import numpy as np
import onnx
import pandas as pd
from skl2onnx import to_onnx
from skl2onnx.common.data_types import FloatTensorType, Int64TensorType, StringTensorType
from sklearn.cluster import KMeans
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_iris
from sklearn.decomposition import PCA
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import SVC

ML = "ai.onnx.ml"
NO_ZIPMAP = {"zipmap": False}  # plain probability tensors instead of a sequence of maps
DIV = {"div": "div"}  # StandardScaler as Sub + Div by per-feature vectors instead of ai.onnx.ml Scaler


def iris():
    x, y = load_iris(return_X_y=True)
    return x.astype(np.float32), y.astype(np.int64)


def table(seed=0, n=160):
    """A small mixed table (3 float columns with missing values, an int64 and a string column), binary target."""
    rng = np.random.default_rng(seed)
    num = rng.normal(size=(n, 3)).astype(np.float32)
    num[rng.random(size=(n, 3)) < 0.05] = np.nan
    count = rng.integers(0, 5, size=n).astype(np.int64)
    colour = rng.choice(np.array(["red", "green", "blue"], dtype=object), size=n)
    y = ((np.nan_to_num(num[:, 0]) + count * 0.3 + (colour == "red")) > 0.8).astype(np.int64)
    frame = pd.DataFrame({"a": num[:, 0], "b": num[:, 1], "c": num[:, 2], "count": count, "colour": colour})
    return frame, y


def build():
    """name -> ModelProto."""
    x, y = iris()
    out = {}

    # Scaler then a linear classifier: Sub/Div by per-feature vectors, MatMul + a broadcast bias.
    m = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(x, y)
    opts = {LogisticRegression: NO_ZIPMAP, StandardScaler: DIV}
    out["scaler_logreg"] = to_onnx(m, x[:1], options=opts, target_opset={"": 17, ML: 3})
    # The same pipeline at opset 7 / ai.onnx.ml 1: an old-opset model (no Expand before opset 8).
    out["scaler_logreg_op7"] = to_onnx(m, x[:1], options=opts, target_opset={"": 7, ML: 1})

    # PCA (mean subtraction, projection) then an SVC with probabilities (SVMClassifier).
    m = make_pipeline(PCA(n_components=3, random_state=0), SVC(probability=True, random_state=0)).fit(x, y)
    out["pca_svc"] = to_onnx(m, x[:1], options={SVC: NO_ZIPMAP}, target_opset={"": 15, ML: 3})

    # ColumnTransformer over a typed table: five graph inputs (float, int64, string), imputer + scaler,
    # one-hot encoders, concatenation, logistic regression.
    frame, yt = table()
    pre = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), ["a", "b", "c"]),
        ("count", OneHotEncoder(handle_unknown="ignore"), ["count"]),
        ("colour", OneHotEncoder(handle_unknown="ignore"), ["colour"]),
    ])
    m = make_pipeline(pre, LogisticRegression(max_iter=1000)).fit(frame, yt)
    types = [("a", FloatTensorType([None, 1])), ("b", FloatTensorType([None, 1])), ("c", FloatTensorType([None, 1])),
             ("count", Int64TensorType([None, 1])), ("colour", StringTensorType([None, 1]))]
    out["column_transformer"] = to_onnx(m, initial_types=types, options={LogisticRegression: NO_ZIPMAP, StandardScaler: DIV},
                                        target_opset={"": 17, ML: 3})

    # Gradient boosting: a TreeEnsembleClassifier plus the softmax/probability arithmetic around it.
    m = GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0).fit(x, y)
    out["gradient_boosting"] = to_onnx(m, x[:1], options={GradientBoostingClassifier: NO_ZIPMAP},
                                       target_opset={"": 17, ML: 3})

    # A small MLP: MatMul + bias Add per layer, ReLU, softmax.
    m = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(16, 8), max_iter=2000, random_state=0)).fit(x, y)
    out["mlp"] = to_onnx(m, x[:1], options={MLPClassifier: NO_ZIPMAP, StandardScaler: DIV},
                       target_opset={"": 17, ML: 3})

    # KMeans: squared distances to the centroids, (N, 1) + (1, K) - 2 X C^T style broadcasting.
    m = KMeans(n_clusters=3, n_init=10, random_state=0).fit(x)
    out["kmeans"] = to_onnx(m, x[:1], target_opset={"": 17, ML: 3})
    # The same at opset 7: Gemm's C broadcast and Add/Mul without Expand available.
    out["kmeans_op7"] = to_onnx(m, x[:1], target_opset={"": 7, ML: 1})

    # Gaussian naive Bayes: log-likelihoods of every sample against every class, (N, 1, F) with (C, F).
    m = GaussianNB().fit(x, y)
    out["gaussian_nb"] = to_onnx(m, x[:1], options={GaussianNB: NO_ZIPMAP}, target_opset={"": 13, ML: 3})

    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: export_models.py OUT_DIR")
    dest = sys.argv[1]
    os.makedirs(dest, exist_ok=True)
    for name, model in build().items():
        model.producer_name = model.producer_name or "skl2onnx"
        onnx.checker.check_model(model, full_check=True)
        path = os.path.join(dest, name + ".onnx")
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(model.SerializeToString())
        os.replace(tmp, path)
        print(name + ".onnx")


if __name__ == "__main__":
    main()
