// Convolutional workloads with torchvision's architectures (so parameter counts match
// torchvision's published ones exactly), in NHWC at TensorFlow op granularity: Conv2D,
// FusedBatchNorm, Relu per convolution.
#include <string>
#include <vector>

#include "models/workloads.hpp"

namespace placesim::models {

namespace {

struct Cnn {
  GraphBuilder& b;
  std::string prefix;
  bool fuse_relu = false;  // ReLU in the batch norm's kernel (builder.hpp, batch_norm_relu)

  // Conv (no bias) + batch norm + optional ReLU, in its own layer scope.
  Tensor conv_bn(const std::string& layer, const Tensor& x, std::int64_t cout, std::int64_t kh,
                 std::int64_t kw, int stride, bool same, bool relu = true) {
    b.scope(prefix + layer);
    const Tensor w = b.variable("weights", {kh, kw, x.shape[3], cout});
    const Tensor gamma = b.variable("BatchNorm/gamma", {cout});
    const Tensor beta = b.variable("BatchNorm/beta", {cout});
    const Tensor c = b.conv2d("Conv2D", x, w, stride, same);
    if (relu && fuse_relu) return b.batch_norm_relu("BatchNorm", c, gamma, beta);
    Tensor y = b.batch_norm("BatchNorm", c, gamma, beta);
    if (relu) y = b.unary("Relu", "Relu", y, 1);
    return y;
  }
  // Conv + BatchNormAddRelu: relu(bn(conv(x)) + addend) in the batch norm's kernel.
  Tensor conv_bn_add_relu(const std::string& layer, const Tensor& x, std::int64_t cout,
                          const Tensor& addend) {
    b.scope(prefix + layer);
    const Tensor w = b.variable("weights", {1, 1, x.shape[3], cout});
    const Tensor gamma = b.variable("BatchNorm/gamma", {cout});
    const Tensor beta = b.variable("BatchNorm/beta", {cout});
    return b.batch_norm_relu("BatchNorm", b.conv2d("Conv2D", x, w, 1, true), gamma, beta, &addend);
  }
  Tensor conv_bn(const std::string& layer, const Tensor& x, std::int64_t cout, std::int64_t k,
                 int stride = 1, bool same = true) {
    return conv_bn(layer, x, cout, k, k, stride, same);
  }
  Tensor pool(const std::string& layer, const std::string& type, const Tensor& x, int k, int stride,
              bool same) {
    b.scope(prefix + layer);
    return b.pool(type, type, x, k, stride, same);
  }
  Tensor concat(const std::string& layer, const std::vector<Tensor>& xs) {
    b.scope(prefix + layer);
    return b.concat("concat", xs, 3);
  }
  // Global average pool + fully connected layer with bias.
  Tensor head(const std::string& layer, const Tensor& x, std::int64_t classes) {
    b.scope(prefix + layer);
    const Tensor p = b.pool("AvgPool", "AvgPool", x, static_cast<int>(x.shape[1]), 1, false);
    const Tensor flat = b.reshape("flatten", p, {x.shape[0], x.shape[3]});
    const Tensor w = b.variable("weights", {x.shape[3], classes});
    const Tensor bias = b.variable("biases", {classes});
    return b.bias_add("logits", b.matmul("MatMul", flat, w), bias);
  }
};

// torchvision.models.inception blocks (Szegedy et al. 2016, figures 5-7).
Tensor inception_a(Cnn& n, const std::string& m, const Tensor& x, std::int64_t pool_features) {
  const Tensor b1 = n.conv_bn(m + "/Branch_0/Conv2d_0a_1x1", x, 64, 1);
  Tensor b5 = n.conv_bn(m + "/Branch_1/Conv2d_0a_1x1", x, 48, 1);
  b5 = n.conv_bn(m + "/Branch_1/Conv2d_0b_5x5", b5, 64, 5);
  Tensor b3 = n.conv_bn(m + "/Branch_2/Conv2d_0a_1x1", x, 64, 1);
  b3 = n.conv_bn(m + "/Branch_2/Conv2d_0b_3x3", b3, 96, 3);
  b3 = n.conv_bn(m + "/Branch_2/Conv2d_0c_3x3", b3, 96, 3);
  Tensor bp = n.pool(m + "/Branch_3/AvgPool_0a_3x3", "AvgPool", x, 3, 1, true);
  bp = n.conv_bn(m + "/Branch_3/Conv2d_0b_1x1", bp, pool_features, 1);
  return n.concat(m, {b1, b5, b3, bp});
}

Tensor inception_b(Cnn& n, const std::string& m, const Tensor& x) {
  const Tensor b3 = n.conv_bn(m + "/Branch_0/Conv2d_1a_3x3", x, 384, 3, 2, false);
  Tensor bd = n.conv_bn(m + "/Branch_1/Conv2d_0a_1x1", x, 64, 1);
  bd = n.conv_bn(m + "/Branch_1/Conv2d_0b_3x3", bd, 96, 3);
  bd = n.conv_bn(m + "/Branch_1/Conv2d_1a_3x3", bd, 96, 3, 2, false);
  const Tensor bp = n.pool(m + "/Branch_2/MaxPool_1a_3x3", "MaxPool", x, 3, 2, false);
  return n.concat(m, {b3, bd, bp});
}

Tensor inception_c(Cnn& n, const std::string& m, const Tensor& x, std::int64_t c7) {
  const Tensor b1 = n.conv_bn(m + "/Branch_0/Conv2d_0a_1x1", x, 192, 1);
  Tensor b7 = n.conv_bn(m + "/Branch_1/Conv2d_0a_1x1", x, c7, 1);
  b7 = n.conv_bn(m + "/Branch_1/Conv2d_0b_1x7", b7, c7, 1, 7, 1, true);
  b7 = n.conv_bn(m + "/Branch_1/Conv2d_0c_7x1", b7, 192, 7, 1, 1, true);
  Tensor bd = n.conv_bn(m + "/Branch_2/Conv2d_0a_1x1", x, c7, 1);
  bd = n.conv_bn(m + "/Branch_2/Conv2d_0b_7x1", bd, c7, 7, 1, 1, true);
  bd = n.conv_bn(m + "/Branch_2/Conv2d_0c_1x7", bd, c7, 1, 7, 1, true);
  bd = n.conv_bn(m + "/Branch_2/Conv2d_0d_7x1", bd, c7, 7, 1, 1, true);
  bd = n.conv_bn(m + "/Branch_2/Conv2d_0e_1x7", bd, 192, 1, 7, 1, true);
  Tensor bp = n.pool(m + "/Branch_3/AvgPool_0a_3x3", "AvgPool", x, 3, 1, true);
  bp = n.conv_bn(m + "/Branch_3/Conv2d_0b_1x1", bp, 192, 1);
  return n.concat(m, {b1, b7, bd, bp});
}

Tensor inception_d(Cnn& n, const std::string& m, const Tensor& x) {
  Tensor b3 = n.conv_bn(m + "/Branch_0/Conv2d_0a_1x1", x, 192, 1);
  b3 = n.conv_bn(m + "/Branch_0/Conv2d_1a_3x3", b3, 320, 3, 2, false);
  Tensor b7 = n.conv_bn(m + "/Branch_1/Conv2d_0a_1x1", x, 192, 1);
  b7 = n.conv_bn(m + "/Branch_1/Conv2d_0b_1x7", b7, 192, 1, 7, 1, true);
  b7 = n.conv_bn(m + "/Branch_1/Conv2d_0c_7x1", b7, 192, 7, 1, 1, true);
  b7 = n.conv_bn(m + "/Branch_1/Conv2d_1a_3x3", b7, 192, 3, 2, false);
  const Tensor bp = n.pool(m + "/Branch_2/MaxPool_1a_3x3", "MaxPool", x, 3, 2, false);
  return n.concat(m, {b3, b7, bp});
}

Tensor inception_e(Cnn& n, const std::string& m, const Tensor& x) {
  const Tensor b1 = n.conv_bn(m + "/Branch_0/Conv2d_0a_1x1", x, 320, 1);
  const Tensor b3 = n.conv_bn(m + "/Branch_1/Conv2d_0a_1x1", x, 384, 1);
  const Tensor b3a = n.conv_bn(m + "/Branch_1/Conv2d_0b_1x3", b3, 384, 1, 3, 1, true);
  const Tensor b3b = n.conv_bn(m + "/Branch_1/Conv2d_0c_3x1", b3, 384, 3, 1, 1, true);
  Tensor bd = n.conv_bn(m + "/Branch_2/Conv2d_0a_1x1", x, 448, 1);
  bd = n.conv_bn(m + "/Branch_2/Conv2d_0b_3x3", bd, 384, 3);
  const Tensor bda = n.conv_bn(m + "/Branch_2/Conv2d_0c_1x3", bd, 384, 1, 3, 1, true);
  const Tensor bdb = n.conv_bn(m + "/Branch_2/Conv2d_0d_3x1", bd, 384, 3, 1, 1, true);
  Tensor bp = n.pool(m + "/Branch_3/AvgPool_0a_3x3", "AvgPool", x, 3, 1, true);
  bp = n.conv_bn(m + "/Branch_3/Conv2d_0b_1x1", bp, 192, 1);
  return n.concat(m, {b1, b3a, b3b, bda, bdb, bp});
}

Tensor classifier_loss(GraphBuilder& b, const std::string& scope, const Tensor& logits,
                       const Tensor& labels) {
  b.scope(scope);
  return b.sparse_softmax_xent("xent", logits, labels);
}

}  // namespace

sim::Graph build_inception_v3(GraphOptions& o) {
  o.accept({"batch", "image_size", "classes", "aux_head", "optimizer"});
  const std::int64_t batch = o.get_int("batch", 32);
  const std::int64_t size = o.get_int("image_size", 299, 75, 4096);
  const std::int64_t classes = o.get_int("classes", 1000);
  const bool aux = o.get_bool("aux_head", true);
  const Optimizer opt = optimizer_option(o, Optimizer::RmsProp);

  GraphBuilder b("inception_v3");
  Cnn n{b, "InceptionV3/"};
  b.scope("input");
  const Tensor images = b.input("images", {batch, size, size, 3});
  const Tensor labels = b.input("labels", {batch}, sim::Dtype::I32);
  Tensor x = n.conv_bn("Conv2d_1a_3x3", images, 32, 3, 2, false);
  x = n.conv_bn("Conv2d_2a_3x3", x, 32, 3, 1, false);
  x = n.conv_bn("Conv2d_2b_3x3", x, 64, 3);
  x = n.pool("MaxPool_3a_3x3", "MaxPool", x, 3, 2, false);
  x = n.conv_bn("Conv2d_3b_1x1", x, 80, 1);
  x = n.conv_bn("Conv2d_4a_3x3", x, 192, 3, 1, false);
  x = n.pool("MaxPool_5a_3x3", "MaxPool", x, 3, 2, false);
  x = inception_a(n, "Mixed_5b", x, 32);
  x = inception_a(n, "Mixed_5c", x, 64);
  x = inception_a(n, "Mixed_5d", x, 64);
  x = inception_b(n, "Mixed_6a", x);
  x = inception_c(n, "Mixed_6b", x, 128);
  x = inception_c(n, "Mixed_6c", x, 160);
  x = inception_c(n, "Mixed_6d", x, 160);
  x = inception_c(n, "Mixed_6e", x, 192);
  Tensor loss_aux;
  if (aux) {
    Tensor a = n.pool("AuxLogits/AvgPool_1a_5x5", "AvgPool", x, 5, 3, false);
    a = n.conv_bn("AuxLogits/Conv2d_1b_1x1", a, 128, 1);
    a = n.conv_bn("AuxLogits/Conv2d_2a_5x5", a, 768, a.shape[1], a.shape[2], 1, false);
    loss_aux = classifier_loss(b, "InceptionV3/AuxLogits/loss",
                               n.head("AuxLogits/Logits", a, classes), labels);
  }
  x = inception_d(n, "Mixed_7a", x);
  x = inception_e(n, "Mixed_7b", x);
  x = inception_e(n, "Mixed_7c", x);
  Tensor loss = classifier_loss(b, "InceptionV3/Logits/loss", n.head("Logits", x, classes), labels);
  b.scope("loss");
  // The auxiliary loss is weighted 0.4 (Szegedy et al. 2016; TF-slim's train_image_classifier).
  if (aux) loss = b.add("total", loss, b.unary("aux_weight", "Mul", loss_aux, 1, false));
  b.train(b.reduce_mean("mean", loss), opt);
  return b.finish(
      {{"builder", "inception_v3"},
       {"options", o.resolved()},
       {"parameters", std::to_string(b.parameter_count())},
       {"source", "Szegedy et al. 2016; torchvision inception_v3 (docs/workloads.md)"}});
}

sim::Graph build_resnet50(GraphOptions& o) {
  o.accept({"batch", "image_size", "classes", "optimizer", "fuse"});
  const std::int64_t batch = o.get_int("batch", 32);
  const std::int64_t size = o.get_int("image_size", 224, 32, 4096);
  const std::int64_t classes = o.get_int("classes", 1000);
  const Optimizer opt = optimizer_option(o, Optimizer::Momentum);
  // MXNet's --fuse-bn-relu / --fuse-bn-add-relu (docs/workloads.md, "Fused batch norm").
  const std::string fuse =
      o.get_choice("fuse", "none", {"none", "bn_relu", "bn_add_relu", "bn_relu+bn_add_relu"});
  const bool fuse_add = fuse == "bn_add_relu" || fuse == "bn_relu+bn_add_relu";

  GraphBuilder b("resnet50");
  Cnn n{b, "resnet50/", fuse == "bn_relu" || fuse == "bn_relu+bn_add_relu"};
  b.scope("input");
  const Tensor images = b.input("images", {batch, size, size, 3});
  const Tensor labels = b.input("labels", {batch}, sim::Dtype::I32);
  Tensor x = n.conv_bn("conv1", images, 64, 7, 2);
  x = n.pool("pool1", "MaxPool", x, 3, 2, true);
  const int blocks[] = {3, 4, 6, 3};
  std::int64_t width = 64;
  for (int s = 0; s < 4; ++s) {
    for (int i = 0; i < blocks[s]; ++i) {
      const std::string m = "layer" + std::to_string(s + 1) + "/block" + std::to_string(i);
      const int stride = (i == 0 && s > 0) ? 2 : 1;
      // torchvision's ResNet v1.5: the stride sits on the 3x3 convolution.
      Tensor y = n.conv_bn(m + "/conv1", x, width, 1);
      y = n.conv_bn(m + "/conv2", y, width, 3, stride);
      if (fuse_add) {
        const Tensor shortcut =
            i == 0 ? n.conv_bn(m + "/downsample", x, 4 * width, 1, 1, stride, true, false) : x;
        x = n.conv_bn_add_relu(m + "/conv3", y, 4 * width, shortcut);
        continue;
      }
      y = n.conv_bn(m + "/conv3", y, 4 * width, 1, 1, 1, true, false);
      Tensor shortcut = x;
      if (i == 0) shortcut = n.conv_bn(m + "/downsample", x, 4 * width, 1, 1, stride, true, false);
      b.scope("resnet50/" + m);
      x = b.unary("Relu", "Relu", b.add("add", y, shortcut), 1);
    }
    width *= 2;
  }
  const Tensor loss = classifier_loss(b, "resnet50/loss", n.head("fc", x, classes), labels);
  b.scope("loss");
  b.train(b.reduce_mean("mean", loss), opt);
  return b.finish({{"builder", "resnet50"},
                   {"options", o.resolved()},
                   {"parameters", std::to_string(b.parameter_count())},
                   {"source", "He et al. 2016; torchvision resnet50 (docs/workloads.md)"}});
}

}  // namespace placesim::models
